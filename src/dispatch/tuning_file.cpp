#include "dispatch/tuning_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace conv::dispatch {
namespace {

constexpr const char *kMagic = "libconv-tuning 2";
constexpr size_t kMaxFileBytes = 64u << 20;  // far above any real table

// FNV-1a, 64 bits: the checksum line covers every byte before it, so a
// corrupted key or name is refused rather than silently misapplied.
uint64_t fnv1a(const std::string &s, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; ++i) {
        h ^= (unsigned char)s[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

std::string hex64(uint64_t v) {
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", (unsigned long long)v);
    return buf;
}

// Keys are what problem_key() writes: printable ASCII.
bool printable(const std::string &s) {
    for (char ch : s)
        if (ch < 0x20 || ch > 0x7e) return false;
    return true;
}

// The solver of the context's engine with this name, or null.
const Solver *engine_solver(const Context &ctx, const std::string &name) {
    for (const Solver *s : ctx.engine().solvers())
        if (name == s->name()) return s;
    return nullptr;
}

[[noreturn]] void bad(const std::string &path, int line, const std::string &what) {
    fail(CONV_STATUS_BAD_FILE, "tuning file %s, line %d: %s", path.c_str(), line, what.c_str());
}

}  // namespace

std::string device_signature(const Context &ctx) {
    return ctx.engine().device_signature(ctx.runtime().get());
}

namespace {

// A symbolic link at the target is refused (IO_ERROR): rename would replace
// the link, but whoever planted it expects the file to go where it points.
// `tmp`, when given, is removed first.
void refuse_symlink(const std::string &path, const std::string &tmp = std::string()) {
    struct stat st;
    if (::lstat(path.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return;
    if (!tmp.empty()) ::unlink(tmp.c_str());
    fail(CONV_STATUS_IO_ERROR,
         "the tuning file %s is a symbolic link: libconv does not write through one (remove it, "
         "or save to the path it points to)",
         path.c_str());
}

// A new file `<path>.tmp.<16 random hex digits>` created with
// O_CREAT | O_EXCL | O_NOFOLLOW and mode 0600 (mkstemp's way: whatever is
// at the name -- a file, a planted symbolic link -- makes the open fail and
// another name is drawn). Returns its descriptor.
int create_temporary(const std::string &path, std::string *tmp) {
    std::random_device random;
    for (int attempt = 0; attempt < 100; ++attempt) {
        const uint64_t bits = (uint64_t)random() << 32 | random();
        char suffix[24];
        std::snprintf(suffix, sizeof suffix, ".tmp.%016llx", (unsigned long long)bits);
        *tmp = path + suffix;
        int fd = ::open(tmp->c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd >= 0) return fd;
        if (errno != EEXIST && errno != ELOOP) break;
    }
    fail(CONV_STATUS_IO_ERROR, "cannot create a temporary file beside the tuning file %s: %s",
         path.c_str(), std::strerror(errno));
}

bool write_all(int fd, const std::string &text) {
    size_t done = 0;
    while (done < text.size()) {
        ssize_t n = ::write(fd, text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        done += (size_t)n;
    }
    return true;
}

// The mode fopen would have given the file: 0666 less the umask, read from
// /proc/self/status (umask() itself would change it for every thread);
// 0600 where that cannot be read.
mode_t default_file_mode() {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line))
        if (line.compare(0, 6, "Umask:") == 0)
            return (mode_t)(0666 & ~std::strtoul(line.c_str() + 6, nullptr, 8));
    return 0600;
}

}  // namespace

void save_tuning(const Context &ctx, const TuningTable &table, const std::string &path) {
    TuningTable::Entries entries = table.snapshot();
    std::ostringstream out;
    out << kMagic << "\nlibrary " << conv_version_string() << "\ndevice "
        << device_signature(ctx) << "\nentries " << entries.size() << "\n";
    for (const auto &e : entries) out << e.first << '\t' << conv_algo_name((conv_algo_t)e.second) << '\n';
    std::string text = out.str();
    text += "checksum " + hex64(fnv1a(text, text.size())) + "\nend\n";

    // Write beside the target and rename: readers see the old file or the new.
    // Nothing at a name another user could have planted is followed: the
    // target must not be a symbolic link, and the temporary is a fresh file
    // under a random name (threads saving to one path at once each write
    // their own; the last rename wins).
    refuse_symlink(path);
    std::string tmp;
    int fd = create_temporary(path, &tmp);
    bool ok = write_all(fd, text) && ::fchmod(fd, default_file_mode()) == 0 && ::fsync(fd) == 0;
    ok = (::close(fd) == 0) && ok;
    if (ok) refuse_symlink(path, tmp);  // again, just before the rename
    if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
        const int err = errno;
        ::unlink(tmp.c_str());
        fail(CONV_STATUS_IO_ERROR, "cannot write the tuning file %s: %s", path.c_str(),
             std::strerror(err));
    }
}

void load_tuning(const Context &ctx, TuningTable &table, const std::string &path) {
    // The whole file first: reading fails with IO_ERROR, parsing with BAD_FILE.
    struct stat st;
    if (::stat(path.c_str(), &st) != 0)
        fail(CONV_STATUS_IO_ERROR, "cannot open the tuning file %s: %s", path.c_str(),
             std::strerror(errno));
    if (!S_ISREG(st.st_mode))
        fail(CONV_STATUS_IO_ERROR, "the tuning file %s is not a regular file", path.c_str());
    std::ifstream in(path, std::ios::binary);
    if (!in) fail(CONV_STATUS_IO_ERROR, "cannot open the tuning file %s", path.c_str());
    std::string data;
    char buf[4096];
    while (in.read(buf, sizeof buf) || in.gcount() > 0) {
        data.append(buf, (size_t)in.gcount());
        if (data.size() > kMaxFileBytes)
            bad(path, 0, "larger than " + std::to_string(kMaxFileBytes) + " bytes");
    }
    if (in.bad()) fail(CONV_STATUS_IO_ERROR, "cannot read the tuning file %s", path.c_str());

    size_t pos = 0, line_start = 0;
    int n = 0;
    std::string line;
    auto next = [&](const char *what) -> const std::string & {
        size_t nl = data.find('\n', pos);
        if (nl == std::string::npos) bad(path, n + 1, std::string("truncated: expected ") + what);
        line_start = pos;
        line.assign(data, pos, nl - pos);
        pos = nl + 1;
        ++n;
        return line;
    };
    if (next("the header") != kMagic)
        bad(path, n, "not a libconv tuning file (or another format version; this is '" +
                         std::string(kMagic) + "')");
    std::string lib = next("the library line");
    if (lib != std::string("library ") + conv_version_string())
        bad(path, n, "made by a different libconv (" + lib + "), this is " + conv_version_string());
    std::string dev = next("the device line"), mine = "device " + device_signature(ctx);
    if (dev != mine) bad(path, n, "measured on another device (" + dev + "), this context is " + mine.substr(7));
    std::string count = next("the entry count");
    long long entries = -1;
    char extra;
    if (std::sscanf(count.c_str(), "entries %lld%c", &entries, &extra) != 1 || entries < 0 ||
        count != "entries " + std::to_string(entries))
        bad(path, n, "malformed entry count");
    TuningTable::Entries loaded;
    for (long long i = 0; i < entries; ++i) {
        const std::string &e = next("an entry");
        size_t tab = e.find('\t');
        if (tab == std::string::npos || tab == 0 || e.find('\t', tab + 1) != std::string::npos)
            bad(path, n, "malformed entry");
        std::string key = e.substr(0, tab), name = e.substr(tab + 1);
        if (!printable(key)) bad(path, n, "malformed problem key");
        const Solver *solver = engine_solver(ctx, name);
        if (!solver) bad(path, n, "unknown algorithm '" + name + "'");
        loaded[key] = solver->id();
    }
    const std::string &sum = next("the checksum line");
    std::string want = "checksum " + hex64(fnv1a(data, line_start));
    if (sum.rfind("checksum ", 0) != 0) bad(path, n, "expected the checksum line");
    if (sum != want) bad(path, n, "checksum mismatch: the file is corrupt");
    if (next("the closing line") != "end") bad(path, n, "expected 'end'");
    if (pos != data.size()) bad(path, n + 1, "data after 'end'");
    table.merge(loaded);
}

}  // namespace conv::dispatch
