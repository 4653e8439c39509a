// The in-process backend: N ranks that are N threads of one process. The
// ranks of a group share a LocalGroup: a generation-counting barrier with a
// timeout and an abort flag, and one published call per rank.
//
// A collective is: publish my call; barrier; check that every rank called
// the same collective with the same count/dtype/op/root and that no two
// ranks' buffers overlap (every rank reaches the same verdict); do my share
// of the work; finish. For all_reduce, rank r owns slice r of the elements:
// it reads that slice of every rank's send buffer (in rank order), sums,
// divides for AVERAGE, and writes the result into every rank's recv buffer,
// so the work and the memory traffic are spread over the N threads.
//
// The opening barrier is where ranks wait for each other: it has the
// timeout, and an abort wakes it. A timeout or an abort on any rank aborts
// the whole group: every rank's waiting call wakes and fails, and later
// calls fail at once. Once it has passed, every rank is doing its share,
// which never waits, so the closing `finish` waits for all of them with no
// deadline and through an abort: no rank returns -- and lets its caller free
// its buffers -- while another rank may still read or write them
// (docs/comm.md, "Memory and failures").
#include "comm/backends.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <mutex>
#include <vector>

#include "comm/kernels.h"
#include "core/dtype.h"

namespace conv::comm {
namespace {

enum CallKind { kAllReduce = 0, kBroadcast = 1, kBarrier = 2 };

const char *kind_name(int k) {
    switch (k) {
    case kAllReduce: return "all_reduce";
    case kBroadcast: return "broadcast";
    default: return "barrier";
    }
}

struct Call {
    int kind = kBarrier;
    const void *send = nullptr;
    void *recv = nullptr;
    int64_t count = 0;
    conv_dtype_t dtype = CONV_DTYPE_FLOAT32;
    conv_reduce_op_t op = CONV_REDUCE_SUM;
    int root = 0;
};

}  // namespace

class LocalGroup {
public:
    explicit LocalGroup(int n) : n_(n), here_(n, 0), calls_(n), live_(n) {}

    int size() const { return n_; }

    void publish(int rank, const Call &c) {
        std::lock_guard<std::mutex> lock(mutex_);
        calls_[rank] = c;
    }
    const Call &call(int rank) const { return calls_[rank]; }  // between the two barriers

    // The opening barrier. Returns OK, or the group's failure (its state, and the
    // reason in *why). A rank that waits longer than `timeout` aborts the
    // group as TIMED_OUT, naming the ranks that did not arrive.
    conv_comm_state_t arrive(int rank, double timeout, const std::string &where,
                             std::string *why) {
        std::unique_lock<std::mutex> lock(mutex_);
        if (state_ != CONV_COMM_STATE_OK) {
            *why = reason_;
            return state_;
        }
        const uint64_t gen = gen_;
        here_[rank] = 1;
        if (++arrived_ == n_) {
            arrived_ = 0;
            std::fill(here_.begin(), here_.end(), 0);
            ++gen_;
            cv_.notify_all();
            return CONV_COMM_STATE_OK;
        }
        auto done = [&] { return gen_ != gen || state_ != CONV_COMM_STATE_OK; };
        if (std::isinf(timeout)) {
            cv_.wait(lock, done);
        } else {
            auto deadline = std::chrono::steady_clock::now() +
                            std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                std::chrono::duration<double>(timeout));
            if (!cv_.wait_until(lock, deadline, done)) {
                std::string missing;
                int listed = 0, count = 0;
                for (int r = 0; r < n_; ++r) {
                    if (here_[r]) continue;
                    ++count;
                    if (listed < 8) {
                        missing += (listed ? ", " : "") + std::to_string(r);
                        ++listed;
                    } else if (listed == 8) {
                        missing += ", ...";
                        ++listed;
                    }
                }
                abort_locked(CONV_COMM_STATE_TIMED_OUT,
                             format("%s timed out after %g s: %s %s did not reach it (the group "
                                    "is aborted)",
                                    where.c_str(), timeout, count == 1 ? "rank" : "ranks",
                                    missing.c_str()));
            }
        }
        if (gen_ != gen) return CONV_COMM_STATE_OK;  // completed, even if aborted since
        // Aborted while waiting: take this rank out of the count.
        here_[rank] = 0;
        --arrived_;
        *why = reason_;
        return state_;
    }

    // The closing barrier of a collective (see the top of the file): waits,
    // with no deadline and whatever the group's state, until every rank has
    // done its share. Returns the group's state when the last one had: an
    // abort (or a destroyed peer) during the work fails every rank's call.
    conv_comm_state_t finish(std::string *why) {
        std::unique_lock<std::mutex> lock(mutex_);
        const uint64_t gen = gen_;
        if (++arrived_ == n_) {
            arrived_ = 0;
            finished_state_ = state_;
            finished_reason_ = reason_;
            ++gen_;
            cv_.notify_all();
        } else {
            cv_.wait(lock, [&] { return gen_ != gen; });
        }
        *why = finished_reason_;
        return finished_state_;
    }

    void abort(conv_comm_state_t state, const std::string &why) {
        std::lock_guard<std::mutex> lock(mutex_);
        abort_locked(state, why);
    }

    conv_comm_state_t state(std::string *why) {
        std::lock_guard<std::mutex> lock(mutex_);
        if (why) *why = reason_;
        return state_;
    }

    void leave(int rank) {
        std::lock_guard<std::mutex> lock(mutex_);
        if (--live_ > 0)
            abort_locked(CONV_COMM_STATE_ABORTED,
                         format("rank %d of the in-process group destroyed its communicator", rank));
    }

private:
    void abort_locked(conv_comm_state_t state, const std::string &why) {
        if (state_ != CONV_COMM_STATE_OK) return;
        state_ = state;
        reason_ = why;
        cv_.notify_all();
    }

    const int n_;
    std::mutex mutex_;
    std::condition_variable cv_;
    uint64_t gen_ = 0;
    int arrived_ = 0;
    std::vector<char> here_;
    std::vector<Call> calls_;
    int live_;
    conv_comm_state_t state_ = CONV_COMM_STATE_OK;
    std::string reason_;
    // the state the last rank to finish the latest collective saw
    conv_comm_state_t finished_state_ = CONV_COMM_STATE_OK;
    std::string finished_reason_;
};

namespace {

class LocalCommunicator final : public Communicator {
public:
    LocalCommunicator(std::shared_ptr<LocalGroup> group, int rank)
        : Communicator(rank, group->size()),
          group_(std::move(group)),
          sends_(group_->size()),
          recvs_(group_->size()) {}

    ~LocalCommunicator() override { group_->leave(rank()); }

    conv_comm_backend_t backend() const override { return CONV_COMM_BACKEND_LOCAL; }

protected:
    void do_all_reduce(const void *send, void *recv, int64_t count, conv_dtype_t dtype,
                       conv_reduce_op_t op) override {
        Call c;
        c.kind = kAllReduce;
        c.send = send;
        c.recv = recv;
        c.count = count;
        c.dtype = dtype;
        c.op = op;
        collective(c, "all_reduce", [&] {
            const int n = size();
            for (int r = 0; r < n; ++r) {
                sends_[r] = group_->call(r).send;
                recvs_[r] = group_->call(r).recv;
            }
            // slice of this rank, a multiple of 16 elements (cache lines)
            int64_t per = (count + n - 1) / n;
            per = (per + 15) / 16 * 16;
            int64_t lo = std::min<int64_t>(count, per * rank());
            int64_t hi = std::min<int64_t>(count, lo + per);
            reduce_into(dtype, n, sends_.data(), recvs_.data(), lo, hi,
                        op == CONV_REDUCE_AVERAGE);
        });
    }

    void do_broadcast(void *buffer, int64_t count, conv_dtype_t dtype, int root) override {
        Call c;
        c.kind = kBroadcast;
        c.send = buffer;
        c.recv = buffer;
        c.count = count;
        c.dtype = dtype;
        c.root = root;
        collective(c, "broadcast", [&] {
            if (rank() != root && count > 0)
                std::memcpy(buffer, group_->call(root).recv, (size_t)count * dtype_size(dtype));
        });
    }

    void do_barrier() override {
        Call c;
        collective(c, "barrier", [] {});
    }

    // This rank failed (its own timeout, conv_comm_abort, a failed bucket):
    // the group fails with it, so that no other rank waits for this one.
    void do_abort() noexcept override {
        std::string reason;
        conv_comm_state_t s = CONV_COMM_STATE_ABORTED;
        try {
            s = Communicator::state(&reason);
        } catch (...) {
            reason.clear();
        }
        group_->abort(s, reason);
    }

    void poll() override {
        std::string why;
        conv_comm_state_t s = group_->state(&why);
        if (s != CONV_COMM_STATE_OK) record_failure(s, why);
    }

private:
    template <class Work>
    void collective(const Call &c, const char *what, Work &&work) {
        const std::string here = where(what);
        std::string why;
        group_->publish(rank(), c);
        conv_comm_state_t s = group_->arrive(rank(), timeout(), here, &why);
        if (s != CONV_COMM_STATE_OK) fail_with(s, why);
        // Past the barrier the other ranks use this rank's buffers: whatever
        // happens here, reach finish before returning or throwing (a failure
        // aborts the group first, so that every rank's call fails).
        std::string mismatch;
        try {
            mismatch = check_calls();
            if (mismatch.empty()) work();
        } catch (const std::exception &e) {
            group_->abort(CONV_COMM_STATE_FAILED, here + ": " + e.what());
        }
        s = group_->finish(&why);
        if (s != CONV_COMM_STATE_OK) fail_with(s, why);
        if (!mismatch.empty())
            fail(CONV_STATUS_INVALID_ARGUMENT, "%s: %s", here.c_str(), mismatch.c_str());
    }

    // The same verdict on every rank: "" when the calls agree.
    std::string check_calls() const {
        const int n = size();
        const Call &c0 = group_->call(0);
        for (int r = 1; r < n; ++r) {
            const Call &c = group_->call(r);
            if (c.kind != c0.kind)
                return format("rank %d called %s while rank 0 called %s (every rank must call the "
                              "same collectives in the same order)",
                              r, kind_name(c.kind), kind_name(c0.kind));
            if (c.kind == kBarrier) continue;
            if (c.count != c0.count)
                return format("rank %d passed count %lld but rank 0 passed %lld", r,
                              (long long)c.count, (long long)c0.count);
            if (c.dtype != c0.dtype)
                return format("rank %d passed dtype %s but rank 0 passed %s", r,
                              dtype_name(c.dtype), dtype_name(c0.dtype));
            if (c.kind == kAllReduce && c.op != c0.op)
                return format("rank %d passed op %s but rank 0 passed %s", r, op_name(c.op),
                              op_name(c0.op));
            if (c.kind == kBroadcast && c.root != c0.root)
                return format("rank %d passed root %d but rank 0 passed root %d", r, c.root,
                              c0.root);
        }
        if (c0.kind == kBarrier || c0.count == 0) return std::string();
        // No rank may write memory another rank reads or writes.
        const size_t bytes = (size_t)c0.count * dtype_size(c0.dtype);
        auto overlap = [bytes](const void *a, const void *b) {
            uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
            return x < y + bytes && y < x + bytes;
        };
        for (int i = 0; i < n; ++i) {
            const Call &a = group_->call(i);
            if (c0.kind == kBroadcast && i == c0.root) continue;  // the root only reads
            for (int j = 0; j < n; ++j) {
                if (j == i) continue;
                const Call &b = group_->call(j);
                if (overlap(a.recv, b.recv) || overlap(a.recv, b.send))
                    return format("rank %d's buffer overlaps rank %d's (%zu bytes each): every "
                                  "rank needs memory of its own",
                                  i, j, bytes);
            }
        }
        return std::string();
    }

    std::shared_ptr<LocalGroup> group_;
    std::vector<const void *> sends_;
    std::vector<void *> recvs_;
};

}  // namespace

std::vector<std::unique_ptr<Communicator>> make_local_group(int n) {
    auto group = std::make_shared<LocalGroup>(n);
    std::vector<std::unique_ptr<Communicator>> comms;
    comms.reserve((size_t)n);
    for (int r = 0; r < n; ++r) comms.push_back(std::make_unique<LocalCommunicator>(group, r));
    return comms;
}

}  // namespace conv::comm
