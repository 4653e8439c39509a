package org.libconv;

import java.nio.Buffer;
import java.nio.ByteBuffer;

/**
 * Scratch memory for one computation at a time ({@code conv_workspace_t}). Calls that share a
 * workspace take turns. A workspace is optional: a call given none uses one from its
 * {@link Context}'s pool.
 */
public final class Workspace extends NativeObject implements AutoCloseable {
    private final Context context;
    private final Buffer memory; // a wrapped buffer, kept reachable while the workspace lives

    private Workspace(long handle, Context context, Buffer memory) {
        super(handle);
        this.context = context;
        this.memory = memory;
    }

    /**
     * Creates a library-owned workspace, which grows to what a call needs and keeps that size,
     * so that a steady state allocates nothing.
     *
     * @param ctx the context
     * @return the workspace
     */
    @CFunction("conv_workspace_create")
    public static Workspace create(Context ctx) {
        long[] out = new long[1];
        try (Pins p = new Pins()) {
            ConvNative.conv_workspace_create(p.pin(ctx, "ctx"), out);
            Workspace ws = new Workspace(out[0], ctx, null);
            ctx.adopt(ws);
            return ws;
        }
    }

    /**
     * Wraps caller memory of a fixed size: the remaining bytes of a direct buffer (any byte
     * order), without copying. It never grows: a call that needs more fails with
     * {@link WorkspaceTooSmallException}. The workspace keeps a reference to the buffer, so the
     * memory stays valid while it is open.
     *
     * @param ctx a CPU context
     * @param memory a direct buffer
     * @return the workspace
     * @throws IllegalArgumentException for a heap buffer or a non-CPU context
     */
    @CFunction("conv_workspace_wrap")
    public static Workspace wrap(Context ctx, ByteBuffer memory) {
        Buffers.checkDirect(memory, "memory", true);
        Buffers.checkWritable(memory, "memory");
        ByteBuffer slice = memory.slice();
        long[] out = new long[1];
        try (Pins p = new Pins()) {
            long c = p.pin(ctx, "ctx");
            if (ctx.device() != Device.CPU)
                throw new IllegalArgumentException("a " + ctx.device() + " context needs device memory: use create()");
            ConvNative.conv_workspace_wrap(c, slice, out);
            Workspace ws = new Workspace(out[0], ctx, slice);
            ctx.adopt(ws);
            return ws;
        }
    }

    @Override
    String kind() {
        return "workspace";
    }

    /**
     * The context the workspace was created with.
     *
     * @return the context
     */
    public Context context() {
        return context;
    }

    /**
     * The current size: for a library-owned workspace what it grew to, for a wrapped one the
     * buffer's size.
     *
     * @return bytes
     */
    @CFunction("conv_workspace_get_size")
    public long size() {
        long[] bytes = new long[1];
        try (Pins p = new Pins()) {
            ConvNative.conv_workspace_get_size(p.pin(this), bytes);
        }
        return bytes[0];
    }

    @Override
    void destroy(long handle) {
        ConvNative.conv_workspace_destroy(handle);
        context.forget(this);
    }

    /** Frees the workspace (not a wrapped buffer). Does nothing the second time. */
    @Override
    @CFunction("conv_workspace_destroy")
    public void close() {
        closeHandle();
    }
}
