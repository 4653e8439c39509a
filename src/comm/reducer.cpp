#include "comm/reducer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "comm/half.h"
#include "core/dtype.h"

namespace conv::comm {
namespace {

constexpr size_t kSlotAlign = 64;  // bytes

int64_t align_up(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

uint64_t fnv(uint64_t h, uint64_t v) {
    for (int i = 0; i < 8; ++i) {
        h ^= (v >> (8 * i)) & 0xffu;
        h *= 0x100000001b3ull;
    }
    return h;
}

}  // namespace

Reducer::Reducer(std::shared_ptr<Communicator> comm, conv_dtype_t dtype)
    : comm_(std::move(comm)), dtype_(dtype), elem_(dtype_size(dtype)) {}

Reducer::~Reducer() {
    if (in_step_ && comm_)
        comm_->abort(comm_->where("a reducer") +
                     " was destroyed with a step in flight (marks without conv_reducer_finish)");
    queue_.reset();  // joins the communication thread
    if (comm_) {
        comm_->release(grads_);
        comm_->release(history_);
        comm_->release(master_);
    }
}

// ---------------------------------------------------------------- configuring

int Reducer::add_param(void *weights, int64_t count) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (is_setup_)
        fail(CONV_STATUS_INVALID_ARGUMENT,
             "conv_reducer_add_param: the reducer is set up (%d parameters); parameters are "
             "added before conv_reducer_setup",
             (int)params_.size());
    if (count < 1)
        fail(CONV_STATUS_INVALID_ARGUMENT, "conv_reducer_add_param: count %lld < 1",
             (long long)count);
    if ((uint64_t)count > (uint64_t)(INT64_MAX / 4) / elem_)
        fail(CONV_STATUS_OVERFLOW, "conv_reducer_add_param: count %lld is too large",
             (long long)count);
    if (params_.size() >= (size_t)(1 << 30))
        fail(CONV_STATUS_OVERFLOW, "conv_reducer_add_param: too many parameters");
    params_.push_back(Param{weights, count});
    return (int)params_.size() - 1;
}

void Reducer::set_bucket_bytes(size_t first, size_t rest) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (is_setup_)
        fail(CONV_STATUS_INVALID_ARGUMENT,
             "conv_reducer_set_bucket_bytes: the reducer is already set up");
    if (first < 1 || rest < 1)
        fail(CONV_STATUS_INVALID_ARGUMENT,
             "conv_reducer_set_bucket_bytes: caps %zu and %zu must be >= 1", first, rest);
    by_count_ = false;
    first_cap_ = first;
    cap_ = rest;
}

void Reducer::set_bucket_count(int buckets) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (is_setup_)
        fail(CONV_STATUS_INVALID_ARGUMENT,
             "conv_reducer_set_bucket_count: the reducer is already set up");
    if (buckets < 1 || buckets > 65536)
        fail(CONV_STATUS_INVALID_ARGUMENT,
             "conv_reducer_set_bucket_count: %d buckets is outside 1..65536", buckets);
    by_count_ = true;
    nbuckets_ = buckets;
}

void Reducer::set_stream(void *stream) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (comm_->device() != CONV_DEVICE_CUDA)
        fail(CONV_STATUS_UNSUPPORTED,
             "conv_reducer_set_stream: the %s communicator works on host memory and has no CUDA "
             "stream",
             backend_name(comm_->backend()));
    if (is_setup_)
        fail(CONV_STATUS_INVALID_ARGUMENT, "conv_reducer_set_stream: set the stream before setup");
    stream_ = stream;
}

void Reducer::check_size() const {
    // Each count is below 2^62 / elem (add_param), but up to 2^30 of them add
    // up past int64: bound the buffer -- every slot padded to its alignment,
    // plus the flag block -- in 128 bits, once, so that no offset or byte
    // size of the layout below can wrap.
    const int64_t align = (int64_t)(kSlotAlign / elem_);
    unsigned __int128 elements = 0, bound = 2 * (unsigned __int128)align;
    for (const Param &p : params_) {
        elements += (uint64_t)p.count;
        bound += (uint64_t)p.count + (uint64_t)align;
    }
    if (bound * elem_ > (unsigned __int128)INT64_MAX)
        fail(CONV_STATUS_OVERFLOW,
             "conv_reducer_setup: %zu parameters of %.6g elements in all (%zu bytes each) need a "
             "gradient buffer of about %.6g bytes, more than int64 can index (%lld)",
             params_.size(), (double)elements, elem_, (double)(bound * elem_),
             (long long)INT64_MAX);
}

Reducer::Layout Reducer::plan() const {
    check_size();  // below, nothing overflows
    Layout l;
    l.params = params_;
    const int64_t align = (int64_t)(kSlotAlign / elem_);
    uint64_t total_bytes = 0;
    for (const Param &p : params_) total_bytes += (uint64_t)p.count * elem_;
    const uint64_t even_cap = (total_bytes + (uint64_t)nbuckets_ - 1) / (uint64_t)nbuckets_;
    int64_t cursor = 0;
    uint64_t bytes = 0;
    Bucket current;
    bool open = false;
    for (int i = (int)params_.size() - 1; i >= 0; --i) {
        if (!open) {
            current = Bucket();
            current.offset = align_up(cursor, align);
            cursor = current.offset;
            bytes = 0;
            open = true;
        }
        Param &p = l.params[(size_t)i];
        p.offset = align_up(cursor, align);
        p.bucket = (int)l.buckets.size();
        cursor = p.offset + p.count;
        bytes += (uint64_t)p.count * elem_;
        current.params.push_back(i);
        uint64_t cap = by_count_ ? even_cap : (l.buckets.empty() ? first_cap_ : cap_);
        if (bytes >= cap || i == 0) {
            current.elements = cursor - current.offset;
            current.reduce_count = current.elements;
            current.pending = (int)current.params.size();
            l.buckets.push_back(current);
            open = false;
        }
    }
    l.flag = align_up(cursor, align);
    l.total = l.flag + align;
    if (!l.buckets.empty()) {
        Bucket &last = l.buckets.back();
        last.reduce_count = l.total - last.offset;
    }
    return l;
}

uint64_t Reducer::signature(const Layout &l) const {
    uint64_t h = 0xcbf29ce484222325ull;
    h = fnv(h, (uint64_t)dtype_);
    h = fnv(h, l.params.size());
    for (const Param &p : l.params) {
        h = fnv(h, (uint64_t)p.count);
        h = fnv(h, (uint64_t)p.bucket);
        h = fnv(h, p.weights != nullptr);
    }
    h = fnv(h, l.buckets.size());
    return h;
}

void Reducer::setup() {
    std::lock_guard<std::mutex> lock(mutex_);
    const char *what = "conv_reducer_setup";
    if (is_setup_) fail(CONV_STATUS_INVALID_ARGUMENT, "%s: the reducer is already set up", what);
    // Lay out and allocate first, so that a rank whose buffer overflows or
    // does not fit in memory fails every rank below (none waits for it).
    Layout l;
    void *grads = nullptr;
    std::string alloc_error;
    conv_status_t alloc_status = CONV_STATUS_SUCCESS;
    try {
        l = plan();
        if (!l.params.empty()) grads = comm_->alloc((size_t)l.total * elem_);
    } catch (const Error &e) {
        alloc_status = e.status();
        alloc_error = e.what();
    }
    struct Release {
        Communicator &c;
        void *&p;
        ~Release() { c.release(p); }
    } release{*comm_, grads};

    // The layout check: every rank's counts and signature, summed into a
    // table everyone sees.
    const int n = comm_->size(), me = comm_->rank();
    int64_t elements = 0;
    for (const Param &p : l.params) elements += p.count;
    std::vector<double> table((size_t)n * 4, 0.0);
    double *mine = &table[(size_t)me * 4];
    mine[0] = (double)l.params.size();
    mine[1] = (double)elements;
    mine[2] = (double)(signature(l) & ((uint64_t(1) << 52) - 1));
    mine[3] = (double)alloc_status;
    comm_->control_sum(table.data(), n * 4);

    if (alloc_status != CONV_STATUS_SUCCESS) throw Error(alloc_status, alloc_error);
    for (int r = 0; r < n; ++r) {
        const auto failed = (conv_status_t)(int)table[(size_t)r * 4 + 3];
        if (failed == CONV_STATUS_OVERFLOW)
            fail(failed, "%s: rank %d's gradient buffer would overflow int64 (its parameters add "
                 "up to more bytes than int64 can index)", what, r);
        if (failed != CONV_STATUS_SUCCESS)
            fail(failed, "%s: rank %d could not allocate its gradient buffer (%lld bytes here)",
                 what, r, (long long)(l.total * (int64_t)elem_));
    }
    std::string diff;
    for (int r = 1; r < n; ++r) {
        const double *a = &table[0], *b = &table[(size_t)r * 4];
        if (a[0] != b[0] || a[1] != b[1])
            diff += format("%srank %d: %.0f parameters, %.0f elements", diff.empty() ? "" : "; ",
                           r, b[0], b[1]);
        else if (a[2] != b[2])
            diff += format("%srank %d: the same counts but other sizes, order, bucket rule or "
                           "weights",
                           diff.empty() ? "" : "; ", r);
    }
    if (!diff.empty())
        fail(CONV_STATUS_SHAPE_MISMATCH,
             "%s: the ranks registered different parameters (rank 0: %.0f parameters, %.0f "
             "elements; %s): every rank must add the same parameters in the same order",
             what, table[0], table[1], diff.c_str());
    if (l.params.empty())
        fail(CONV_STATUS_INVALID_ARGUMENT, "%s: no parameter was added", what);

    std::unique_ptr<CommQueue> queue = comm_->make_queue(stream_);
    // commit
    params_ = std::move(l.params);
    buckets_ = std::move(l.buckets);
    total_ = l.total;
    flag_ = l.flag;
    grads_ = grads;
    grads = nullptr;
    queue_ = std::move(queue);
    marked_.assign(params_.size(), 0);
    is_setup_ = true;
}

// -------------------------------------------------------------------- queries

void Reducer::require_setup(const char *what) const {
    if (!is_setup_)
        fail(CONV_STATUS_INVALID_ARGUMENT, "%s: the reducer is not set up (conv_reducer_setup)",
             what);
}

void Reducer::require_idle(const char *what) const {
    require_setup(what);
    if (in_step_)
        fail(CONV_STATUS_INVALID_ARGUMENT,
             "%s: a step is in flight (parameters were marked): call conv_reducer_finish first",
             what);
}

void Reducer::require_weights(const char *what) const {
    for (size_t i = 0; i < params_.size(); ++i)
        if (!params_[i].weights)
            fail(CONV_STATUS_INVALID_ARGUMENT,
                 "%s: parameter %zu was added without weights (NULL)", what, i);
}

int Reducer::check_param(int p, const char *what) const {
    require_setup(what);
    if (p < 0 || p >= (int)params_.size())
        fail(CONV_STATUS_INVALID_ARGUMENT, "%s: parameter %d is not one of 0..%d", what, p,
             (int)params_.size() - 1);
    return p;
}

char *Reducer::at(int64_t offset) const {
    return static_cast<char *>(grads_) + (size_t)offset * elem_;
}

int Reducer::param_count() {
    std::lock_guard<std::mutex> lock(mutex_);
    return (int)params_.size();
}

int Reducer::bucket_count() {
    std::lock_guard<std::mutex> lock(mutex_);
    require_setup("conv_reducer_get_bucket_count");
    return (int)buckets_.size();
}

void Reducer::bucket(int b, int64_t *offset, int64_t *elements, int *params) {
    std::lock_guard<std::mutex> lock(mutex_);
    require_setup("conv_reducer_get_bucket");
    if (b < 0 || b >= (int)buckets_.size())
        fail(CONV_STATUS_INVALID_ARGUMENT, "conv_reducer_get_bucket: bucket %d is not one of 0..%d",
             b, (int)buckets_.size() - 1);
    const Bucket &k = buckets_[(size_t)b];
    if (offset) *offset = k.offset;
    if (elements) *elements = k.elements;
    if (params) *params = (int)k.params.size();
}

void Reducer::param_slot(int p, int *bucket, int64_t *offset) {
    std::lock_guard<std::mutex> lock(mutex_);
    check_param(p, "conv_reducer_get_param_slot");
    if (bucket) *bucket = params_[(size_t)p].bucket;
    if (offset) *offset = params_[(size_t)p].offset;
}

void *Reducer::grad(int p) {
    std::lock_guard<std::mutex> lock(mutex_);
    check_param(p, "conv_reducer_get_grad");
    return at(params_[(size_t)p].offset);
}

void *Reducer::buffer(int64_t *elements) {
    std::lock_guard<std::mutex> lock(mutex_);
    require_setup("conv_reducer_get_buffer");
    if (elements) *elements = total_;
    return grads_;
}

void Reducer::step_times(double *communication, double *exposed) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (communication) *communication = comm_seconds_;
    if (exposed) *exposed = exposed_seconds_;
}

// ---------------------------------------------------------------------- steps

double Reducer::read_flag() const {
    const void *p = at(flag_);
    switch (dtype_) {
    case CONV_DTYPE_FLOAT32: return *static_cast<const float *>(p);
    case CONV_DTYPE_FLOAT64: return *static_cast<const double *>(p);
    case CONV_DTYPE_FLOAT16: return half_to_float(*static_cast<const uint16_t *>(p));
    default: return bf16_to_float(*static_cast<const uint16_t *>(p));
    }
}

void Reducer::write_flag(double v) {
    void *p = at(flag_);
    switch (dtype_) {
    case CONV_DTYPE_FLOAT32: *static_cast<float *>(p) = (float)v; break;
    case CONV_DTYPE_FLOAT64: *static_cast<double *>(p) = v; break;
    case CONV_DTYPE_FLOAT16: *static_cast<uint16_t *>(p) = float_to_half((float)v); break;
    default: *static_cast<uint16_t *>(p) = float_to_bf16((float)v); break;
    }
}

void Reducer::start_step() {
    for (Bucket &b : buckets_) b.pending = (int)b.params.size();
    std::fill(marked_.begin(), marked_.end(), 0);
    next_launch_ = 0;
    queue_->reset_stats();
    if (comm_->device() == CONV_DEVICE_CPU) write_flag(0.0);
    in_step_ = true;
}

void Reducer::launch_ready() {
    while (next_launch_ < (int)buckets_.size() && buckets_[(size_t)next_launch_].pending == 0) {
        const Bucket &b = buckets_[(size_t)next_launch_];
        queue_->submit(at(b.offset), b.reduce_count, dtype_, CONV_REDUCE_AVERAGE);
        ++next_launch_;
    }
}

void Reducer::mark(int p, bool unused, const char *what) {
    std::lock_guard<std::mutex> lock(mutex_);
    check_param(p, what);
    comm_->state(nullptr);  // notices a failure of the other ranks (LOCAL group, NCCL)
    comm_->throw_if_failed(what);
    if (in_step_ && marked_[(size_t)p])
        fail(CONV_STATUS_INVALID_ARGUMENT,
             "%s: parameter %d was already marked in this step (each parameter is marked once "
             "per step)",
             what, p);
    if (unused)
        comm_->zero(at(params_[(size_t)p].offset), (size_t)params_[(size_t)p].count * elem_,
                    stream_);
    if (!in_step_) start_step();
    marked_[(size_t)p] = 1;
    --buckets_[(size_t)params_[(size_t)p].bucket].pending;
    launch_ready();
}

void Reducer::mark_ready(int p) { mark(p, false, "conv_reducer_mark_ready"); }

void Reducer::mark_unused(int p) { mark(p, true, "conv_reducer_mark_unused"); }

void Reducer::finish() {
    std::lock_guard<std::mutex> lock(mutex_);
    const char *what = "conv_reducer_finish";
    require_setup(what);
    if (!in_step_) start_step();
    // Parameters never marked: zero-filled and reduced all the same, so
    // that no rank waits for this one; the step then fails.
    int missing = 0, first_missing = -1;
    for (size_t i = 0; i < params_.size(); ++i) {
        if (marked_[i]) continue;
        if (first_missing < 0) first_missing = (int)i;
        ++missing;
        try {
            comm_->zero(at(params_[i].offset), (size_t)params_[i].count * elem_, stream_);
        } catch (...) {
            // the reduction below reports the communicator's failure
        }
        marked_[i] = 1;
        --buckets_[(size_t)params_[i].bucket].pending;
    }
    const bool host = comm_->device() == CONV_DEVICE_CPU;
    if (missing && host) write_flag(1.0);
    const double t0 = now_seconds();
    in_step_ = false;  // whatever happens below, the next mark starts a new step
    try {
        launch_ready();
        queue_->wait();
    } catch (...) {
        exposed_seconds_ = now_seconds() - t0;
        comm_seconds_ = queue_->busy_seconds();
        // Wait for what was submitted before reporting (bounded by the
        // timeout): the thread must not touch the buffer after we return.
        try {
            queue_->wait();
        } catch (...) {
        }
        throw;
    }
    exposed_seconds_ = now_seconds() - t0;
    comm_seconds_ = queue_->busy_seconds();
    const int n = comm_->size();
    if (missing)
        fail(CONV_STATUS_INVALID_ARGUMENT,
             "%s: parameter %d (of %d) was neither marked ready nor unused in this step (%d "
             "parameter%s missed on rank %d of %d; its gradient was taken as zero)",
             what, first_missing, (int)params_.size(), missing, missing == 1 ? "" : "s",
             comm_->rank(), n);
    if (host) {
        double f = read_flag();
        if (f != 0.0) {
            long ranks = std::lround(f * n);
            fail(CONV_STATUS_INVALID_ARGUMENT,
                 "%s: %ld of %d ranks finished the step with a parameter neither marked ready "
                 "nor unused (this rank, %d, marked all of its); the averaged gradients are "
                 "incomplete",
                 what, ranks, n, comm_->rank());
        }
    }
}

void Reducer::broadcast_params(int root) {
    std::lock_guard<std::mutex> lock(mutex_);
    const char *what = "conv_reducer_broadcast_params";
    require_idle(what);
    require_weights(what);
    if (root < 0 || root >= comm_->size())
        fail(CONV_STATUS_INVALID_ARGUMENT, "%s: root %d is not a rank of 0..%d", what, root,
             comm_->size() - 1);
    int64_t largest = 0;
    for (const Bucket &b : buckets_) largest = std::max(largest, b.elements);
    void *staging = comm_->alloc((size_t)largest * elem_);
    struct Release {
        Communicator &c;
        void *p;
        ~Release() { c.release(p); }
    } release{*comm_, staging};
    void *s = comm_->collective_stream();
    char *base = static_cast<char *>(staging);
    for (const Bucket &b : buckets_) {
        for (int i : b.params) {
            const Param &p = params_[(size_t)i];
            comm_->copy(base + (size_t)(p.offset - b.offset) * elem_, p.weights,
                        (size_t)p.count * elem_, s);
        }
        comm_->broadcast(staging, b.elements, dtype_, root);
        if (comm_->rank() == root) continue;
        for (int i : b.params) {
            const Param &p = params_[(size_t)i];
            comm_->copy(p.weights, base + (size_t)(p.offset - b.offset) * elem_,
                        (size_t)p.count * elem_, s);
        }
    }
    comm_->synchronize();
}

void Reducer::apply_sgd(double lr, double momentum, double decay) {
    std::lock_guard<std::mutex> lock(mutex_);
    const char *what = "conv_reducer_apply_sgd";
    require_idle(what);
    if (!std::isfinite(lr) || !std::isfinite(momentum) || !std::isfinite(decay))
        fail(CONV_STATUS_INVALID_ARGUMENT,
             "%s: learning rate %g, momentum %g and weight decay %g must be finite", what, lr,
             momentum, decay);
    require_weights(what);
    comm_->sgd(dtype_, nullptr, nullptr, nullptr, nullptr, 0, lr, momentum, decay);  // supported here?
    if (!history_) history_ = comm_->alloc((size_t)total_ * elem_);
    const bool half = dtype_ == CONV_DTYPE_FLOAT16 || dtype_ == CONV_DTYPE_BFLOAT16;
    if (half && comm_->sgd_keeps_master() && !master_)  // zeros: the kernel seeds it from w
        master_ = comm_->alloc((size_t)total_ * sizeof(float));
    char *h = static_cast<char *>(history_);
    float *m = static_cast<float *>(master_);
    for (const Bucket &b : buckets_)
        for (int i : b.params) {
            const Param &p = params_[(size_t)i];
            size_t off = (size_t)p.offset * elem_;
            comm_->sgd(dtype_, p.weights, at(p.offset), h + off, m ? m + p.offset : nullptr, p.count,
                       lr, momentum, decay);
        }
}

}  // namespace conv::comm
