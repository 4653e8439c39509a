// The gradient reducer behind conv_reducer_t (NVCaffe's and PyTorch DDP's
// bucketed all-reduce), written only against Communicator and CommQueue.
//
// Layout: parameters are registered in forward order; the flat gradient
// buffer holds them in reverse (the order backward produces them), each
// slot on a 64-byte boundary, grouped into buckets closed at a byte cap.
// After the last bucket's parameters comes one 64-byte block of the
// reducer's own, reduced with the last bucket: its first element is 1 on a
// rank that finished a step with a parameter never marked, so that every
// rank (host backends) learns of it from the reduction itself, without a
// collective of its own.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "comm/communicator.h"

namespace conv::comm {

class Reducer {
public:
    Reducer(std::shared_ptr<Communicator> comm, conv_dtype_t dtype);
    ~Reducer();
    Reducer(const Reducer &) = delete;
    Reducer &operator=(const Reducer &) = delete;

    int add_param(void *weights, int64_t count);
    void set_bucket_bytes(size_t first, size_t rest);
    void set_bucket_count(int buckets);
    void set_stream(void *stream);
    void setup();

    int param_count();
    int bucket_count();
    void bucket(int b, int64_t *offset, int64_t *elements, int *params);
    void param_slot(int p, int *bucket, int64_t *offset);
    void *grad(int p);
    void *buffer(int64_t *elements);

    void broadcast_params(int root);
    void mark_ready(int p);
    void mark_unused(int p);
    void finish();
    void apply_sgd(double lr, double momentum, double decay);
    void step_times(double *communication, double *exposed);

private:
    struct Param {
        void *weights;
        int64_t count;
        int bucket = -1;
        int64_t offset = 0;  // of its slot in the buffer, in elements
    };
    struct Bucket {
        int64_t offset = 0;        // first element
        int64_t elements = 0;      // up to the end of its last slot
        int64_t reduce_count = 0;  // what is reduced (the last: + the flag block)
        std::vector<int> params;   // in bucket order (reverse registration)
        int pending = 0;           // parameters not yet marked this step
    };
    struct Layout {
        std::vector<Param> params;
        std::vector<Bucket> buckets;
        int64_t total = 0;  // elements of the buffer
        int64_t flag = 0;   // offset of the flag element
    };

    void check_size() const;  // OVERFLOW when the flat buffer's bytes exceed int64
    Layout plan() const;
    uint64_t signature(const Layout &l) const;
    void require_setup(const char *what) const;
    void require_idle(const char *what) const;
    void require_weights(const char *what) const;
    int check_param(int p, const char *what) const;
    char *at(int64_t offset) const;
    void start_step();
    void mark(int p, bool unused, const char *what);
    void launch_ready();
    double read_flag() const;
    void write_flag(double v);

    std::shared_ptr<Communicator> comm_;
    const conv_dtype_t dtype_;
    const size_t elem_;
    std::mutex mutex_;
    // configuration
    std::vector<Param> params_;
    bool by_count_ = false;
    size_t first_cap_ = size_t(1) << 20;
    size_t cap_ = size_t(25) << 20;
    int nbuckets_ = 6;
    void *stream_ = nullptr;
    // after setup
    bool is_setup_ = false;
    std::vector<Bucket> buckets_;
    int64_t total_ = 0;
    int64_t flag_ = 0;
    void *grads_ = nullptr;
    void *history_ = nullptr;
    // fp32 copy of fp16/bf16 weights for a device SGD step (Communicator::sgd).
    void *master_ = nullptr;
    std::unique_ptr<CommQueue> queue_;
    // the step
    bool in_step_ = false;
    std::vector<char> marked_;
    int next_launch_ = 0;
    double comm_seconds_ = 0.0;
    double exposed_seconds_ = 0.0;
};

}  // namespace conv::comm
