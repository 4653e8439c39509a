package org.libconv;

import java.util.concurrent.atomic.AtomicInteger;

/**
 * A native handle with a safe life cycle, the base of the AutoCloseable
 * classes. Every native call on the handle runs between {@link #pin()} and
 * {@link #unpin()}; {@link #closeHandle()} marks the object closed (after
 * which pin() throws IllegalStateException), waits until the calls already
 * running have finished, then destroys the handle once. So a method on a
 * closed object throws instead of passing a dangling pointer to C, also when
 * another thread closes the object at the same moment. pin() never blocks,
 * so no pattern of pins and closes can deadlock.
 *
 * There is no finalizer or cleaner: an object that is never closed keeps its
 * native memory (until its Context is closed, for tensors and workspaces).
 */
abstract class NativeObject {
    private static final int CLOSED = Integer.MIN_VALUE;

    /** The C handle; valid while pinned. */
    final long handle;
    /** CLOSED bit | number of calls in flight. Also the monitor close() waits on. */
    private final AtomicInteger state = new AtomicInteger();

    NativeObject(long handle) {
        this.handle = handle;
    }

    /** "tensor", "context", ...: for messages. */
    abstract String kind();

    /** Destroys the handle (conv_xxx_destroy); called once, with no call in flight. */
    abstract void destroy(long handle);

    /** Called once by closeHandle() before destroy(), with no call in flight. */
    void beforeDestroy() {}

    /** Returns the handle for one native call; throws if closed. */
    final long pin() {
        for (;;) {
            int s = state.get();
            if (s < 0) throw new IllegalStateException("this " + kind() + " is closed");
            if (s == Integer.MAX_VALUE) throw new IllegalStateException("too many calls in flight");
            if (state.compareAndSet(s, s + 1)) return handle;
        }
    }

    /**
     * Throws if closed: called first by methods that check their arguments in Java before
     * pinning, so that a closed object throws IllegalStateException whatever the arguments.
     */
    final void ensureOpen() {
        if (state.get() < 0) throw new IllegalStateException("this " + kind() + " is closed");
    }

    /** Ends a native call begun by pin(). */
    final void unpin() {
        if (state.decrementAndGet() == CLOSED) {
            synchronized (state) {
                state.notifyAll();
            }
        }
    }

    /**
     * Whether {@code close()} has been called. A closed object throws
     * {@link IllegalStateException} from every method but {@code close()}
     * (which may be called again) and {@code isClosed()}.
     *
     * @return true once closed
     */
    public final boolean isClosed() {
        return state.get() < 0;
    }

    /** Marks the object closed, waits for running calls, destroys the handle. */
    final void closeHandle() {
        for (;;) {
            int s = state.get();
            if (s < 0) return;
            if (state.compareAndSet(s, s | CLOSED)) break;
        }
        boolean interrupted = false;
        synchronized (state) {
            while (state.get() != CLOSED) {
                try {
                    state.wait();
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
        }
        try {
            beforeDestroy();
        } finally {
            destroy(handle);
            if (interrupted) Thread.currentThread().interrupt();
        }
    }

    @Override
    public String toString() {
        return getClass().getSimpleName() + (isClosed() ? "(closed)" : "(0x" + Long.toHexString(handle) + ")");
    }
}
