// The reducer's queue for host backends (LOCAL, MPI): one thread of libconv
// per queue runs the communicator's blocking all_reduce for each submitted
// bucket, in submission order, while the application's thread goes on with
// backward. Every collective is bounded by the communicator's timeout (and
// ended by an abort), so the thread never waits forever. A failure aborts
// the communicator, so that the other ranks stop waiting for this one's
// next buckets, and is reported by wait().
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <new>
#include <thread>

#include "comm/communicator.h"

namespace conv::comm {
namespace {

class HostQueue final : public CommQueue {
public:
    HostQueue(Communicator &comm, bool on_thread) : comm_(comm), on_thread_(on_thread) {
        if (on_thread_) thread_ = std::thread([this] { loop(); });
    }

    ~HostQueue() override {
        if (thread_.joinable()) {
            {
                std::lock_guard<std::mutex> lock(mutex_);
                stop_ = true;
            }
            work_cv_.notify_all();
            thread_.join();
        }
    }

    void submit(void *data, int64_t count, conv_dtype_t dtype, conv_reduce_op_t op) override {
        Task t{data, count, dtype, op};
        if (!on_thread_) {
            run(t);
            return;
        }
        {
            std::lock_guard<std::mutex> lock(mutex_);
            tasks_.push_back(t);
        }
        work_cv_.notify_one();
    }

    void wait() override {
        std::unique_lock<std::mutex> lock(mutex_);
        idle_cv_.wait(lock, [this] { return tasks_.empty() && !running_; });
        if (failed_) {
            failed_ = false;
            throw Error(status_, message_);
        }
    }

    bool busy() override {
        std::lock_guard<std::mutex> lock(mutex_);
        return !tasks_.empty() || running_;
    }

    double busy_seconds() const override {
        std::lock_guard<std::mutex> lock(mutex_);
        return busy_;
    }

    void reset_stats() override {
        std::lock_guard<std::mutex> lock(mutex_);
        busy_ = 0.0;
    }

private:
    struct Task {
        void *data;
        int64_t count;
        conv_dtype_t dtype;
        conv_reduce_op_t op;
    };

    // Runs one reduction; records its failure (the first of the step).
    void run(const Task &t) {
        conv_status_t status = CONV_STATUS_SUCCESS;
        std::string message;
        double t0 = now_seconds();
        try {
            comm_.all_reduce(t.data, t.data, t.count, t.dtype, t.op);
        } catch (const Error &e) {
            status = e.status();
            message = e.what();
        } catch (const std::bad_alloc &) {
            status = CONV_STATUS_OUT_OF_MEMORY;
            message = "out of host memory in a bucket's reduction";
        } catch (const std::exception &e) {
            status = CONV_STATUS_INTERNAL_ERROR;
            message = e.what();
        }
        double t1 = now_seconds();
        if (status != CONV_STATUS_SUCCESS) {
            // A bucket this rank did not reduce would leave the others
            // waiting for it: end the communicator for every rank.
            comm_.abort(comm_.where("a reducer's bucket") + " failed: " + message);
        }
        std::lock_guard<std::mutex> lock(mutex_);
        busy_ += t1 - t0;
        if (status != CONV_STATUS_SUCCESS && !failed_) {
            failed_ = true;
            status_ = status;
            message_ = message;
        }
    }

    void loop() {
        std::unique_lock<std::mutex> lock(mutex_);
        for (;;) {
            work_cv_.wait(lock, [this] { return stop_ || !tasks_.empty(); });
            if (stop_) {
                tasks_.clear();
                break;
            }
            Task t = tasks_.front();
            tasks_.pop_front();
            running_ = true;
            lock.unlock();
            run(t);
            lock.lock();
            running_ = false;
            if (tasks_.empty()) idle_cv_.notify_all();
        }
        running_ = false;
        idle_cv_.notify_all();
    }

    Communicator &comm_;
    const bool on_thread_;
    mutable std::mutex mutex_;
    std::condition_variable work_cv_, idle_cv_;
    std::deque<Task> tasks_;
    bool running_ = false;
    bool stop_ = false;
    bool failed_ = false;
    conv_status_t status_ = CONV_STATUS_SUCCESS;
    std::string message_;
    double busy_ = 0.0;
    std::thread thread_;  // last: started once the members above exist
};

}  // namespace

std::unique_ptr<CommQueue> make_host_queue(Communicator &comm, bool on_thread) {
    return std::make_unique<HostQueue>(comm, on_thread);
}

}  // namespace conv::comm
