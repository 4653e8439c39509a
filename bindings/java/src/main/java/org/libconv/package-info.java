/**
 * libconv for Java: N-d convolution (forward, backward-data, backward-filter, bias, transposed)
 * on the CPU and NVIDIA GPUs, through the stable C API of {@code conv.h}.
 *
 * <h2>Using it</h2>
 * Put the jar on the class path; that is all. The jar carries the native libraries for its
 * platform and loads them itself the first time it is used (from {@code java.library.path} if a
 * {@code libconvjni} is there, else by extracting its own copies to a temporary directory; the
 * system property {@code org.libconv.tmpdir} moves that directory, {@code
 * org.libconv.jni.library} names a library file to load instead). OpenBLAS comes from the
 * system ({@code libopenblas0} on Debian).
 *
 * <pre>
 * try (Context ctx = Context.cpu();
 *      Conv conv = new Conv(2).setPadding(1, 1);
 *      Tensor x = Tensor.create(ctx, DType.FLOAT32, Layout.CHANNELS_FIRST, 1, 3, 32, 32);
 *      Tensor w = Tensor.create(ctx, DType.FLOAT32, Layout.CHANNELS_FIRST, 16, 3, 3, 3);
 *      Tensor y = Tensor.create(ctx, DType.FLOAT32, Layout.CHANNELS_FIRST, conv.outputDims(x, w))) {
 *     x.copyFrom(pixels);                 // float[] of 1*3*32*32
 *     w.copyFrom(weights);
 *     conv.forward(ctx, x, w, null, y);
 *     float[] out = y.toFloatArray();
 * }
 * </pre>
 *
 * <h2>Handles</h2>
 * {@link org.libconv.Context}, {@link org.libconv.Tensor}, {@link org.libconv.Conv},
 * {@link org.libconv.Plan} and {@link org.libconv.Workspace} own native handles and are
 * {@link java.lang.AutoCloseable}:
 * {@code close()} frees the handle at once (there are no finalizers), every other method of a
 * closed object throws {@link java.lang.IllegalStateException}, and closing is safe from any
 * thread: it waits for calls running on the object. Closing a context also closes the tensors
 * and workspaces created with it (a plan stays open, and refuses to run).
 *
 * <h2>Memory without copies</h2>
 * {@link org.libconv.Tensor#wrap(Context, java.nio.FloatBuffer, Layout, long...) Tensor.wrap}
 * and {@link org.libconv.Workspace#wrap Workspace.wrap} use a direct NIO buffer's memory in
 * place. The buffer must be direct and, for tensors, in native byte order
 * ({@code ByteBuffer.allocateDirect(n).order(ByteOrder.nativeOrder())}); heap buffers and other
 * byte orders are refused with an {@link java.lang.IllegalArgumentException} saying so. The
 * tensor starts at the buffer's position. The {@code float[]}/{@code double[]} overloads of
 * {@code copyFrom}/{@code copyTo} are for convenience and copy.
 *
 * <h2>Errors</h2>
 * Every failing C call throws the {@link org.libconv.ConvException} subclass of its
 * {@link org.libconv.Status}, with the C library's message.
 *
 * <h2>Threads</h2>
 * A context may be used by several threads at once; a tensor may be read by several calls at
 * once but written by one; a workspace serves one call at a time (others wait); a descriptor's
 * setters wait for the passes running on it.
 *
 * <p>Every public method names the C functions it calls with {@link org.libconv.CFunction}; the
 * C documentation in {@code conv.h} has the details.
 */
package org.libconv;
