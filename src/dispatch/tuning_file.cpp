#include "dispatch/tuning_file.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "dispatch/registry.h"

namespace conv::dispatch {
namespace {

constexpr const char *kMagic = "libconv-tuning 1";

std::string cpu_model() {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind("model name", 0) == 0) {
            size_t colon = line.find(':');
            if (colon != std::string::npos) {
                size_t b = line.find_first_not_of(" \t", colon + 1);
                return b == std::string::npos ? "unknown" : line.substr(b);
            }
        }
    return "unknown";
}

conv_algo_t algo_by_name(const std::string &name) {
    for (int id = CONV_ALGO_IM2COL_GEMM;; ++id) {
        std::string n = conv_algo_name((conv_algo_t)id);
        if (n == "unknown") return CONV_ALGO_AUTO;
        if (n == name) return (conv_algo_t)id;
    }
}

[[noreturn]] void bad(const std::string &path, int line, const std::string &what) {
    fail(CONV_STATUS_BAD_FILE, "tuning file %s, line %d: %s", path.c_str(), line, what.c_str());
}

}  // namespace

std::string device_signature(const Context &) { return "cpu " + cpu_model(); }

void save_tuning(const Context &ctx, const TuningTable &table, const std::string &path) {
    TuningTable::Entries entries = table.snapshot();
    std::ostringstream out;
    out << kMagic << "\nlibrary " << conv_version_string() << "\ndevice "
        << device_signature(ctx) << "\nentries " << entries.size() << "\n";
    for (const auto &e : entries) out << e.first << '\t' << conv_algo_name((conv_algo_t)e.second) << '\n';
    out << "end\n";
    std::string text = out.str();

    // Write beside the target and rename: readers see the old file or the new.
    std::string tmp = path + ".tmp." + std::to_string(::getpid());
    FILE *f = std::fopen(tmp.c_str(), "wb");
    if (!f) fail(CONV_STATUS_IO_ERROR, "cannot create %s", tmp.c_str());
    bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
    ok = (std::fflush(f) == 0) && ok;
    ok = (::fsync(::fileno(f)) == 0) && ok;
    ok = (std::fclose(f) == 0) && ok;
    if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
        std::remove(tmp.c_str());
        fail(CONV_STATUS_IO_ERROR, "cannot write the tuning file %s", path.c_str());
    }
}

void load_tuning(const Context &ctx, TuningTable &table, const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) fail(CONV_STATUS_IO_ERROR, "cannot open the tuning file %s", path.c_str());
    std::string line;
    int n = 0;
    auto next = [&](const char *what) {
        if (!std::getline(in, line)) bad(path, n + 1, std::string("truncated: expected ") + what);
        ++n;
        return line;
    };
    if (next("the header") != kMagic) bad(path, n, "not a libconv tuning file (or another format version)");
    std::string lib = next("the library line");
    if (lib != std::string("library ") + conv_version_string())
        bad(path, n, "made by a different libconv (" + lib + "), this is " + conv_version_string());
    std::string dev = next("the device line"), mine = "device " + device_signature(ctx);
    if (dev != mine) bad(path, n, "measured on another device (" + dev + "), this context is " + mine.substr(7));
    std::string count = next("the entry count");
    long long entries = -1;
    char extra;
    if (std::sscanf(count.c_str(), "entries %lld%c", &entries, &extra) != 1 || entries < 0)
        bad(path, n, "malformed entry count");
    TuningTable::Entries loaded;
    for (long long i = 0; i < entries; ++i) {
        std::string e = next("an entry");
        size_t tab = e.find('\t');
        if (tab == std::string::npos || tab == 0 || e.find('\t', tab + 1) != std::string::npos)
            bad(path, n, "malformed entry");
        std::string name = e.substr(tab + 1);
        conv_algo_t algo = algo_by_name(name);
        if (algo == CONV_ALGO_AUTO || !find_cpu(algo)) bad(path, n, "unknown algorithm '" + name + "'");
        loaded[e.substr(0, tab)] = algo;
    }
    if (next("the closing line") != "end") bad(path, n, "expected 'end'");
    if (std::getline(in, line)) bad(path, n + 1, "data after 'end'");
    table.merge(loaded);
}

}  // namespace conv::dispatch
