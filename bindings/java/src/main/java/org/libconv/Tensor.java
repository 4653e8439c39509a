package org.libconv;

import java.nio.Buffer;
import java.nio.ByteBuffer;
import java.nio.DoubleBuffer;
import java.nio.FloatBuffer;
import java.nio.ShortBuffer;
import java.util.Arrays;

/**
 * An N-d array on a context's device ({@code conv_tensor_t}): 3 to 5 dimensions listed
 * N, C, spatial... whatever the {@link Layout}.
 *
 * <p>Two kinds:
 * <ul>
 *   <li>{@link #create} allocates memory that libconv owns (zero-filled); data goes in and out
 *       through {@code copyFrom} / {@code copyTo}.
 *   <li>{@link #wrap(Context, FloatBuffer, Layout, long...) wrap} uses the memory of a direct NIO
 *       buffer in place, without copying: what Java writes into the buffer is what libconv
 *       reads, and what libconv computes appears in the buffer. The tensor keeps a reference to
 *       the buffer, so the memory stays valid while the tensor is open.
 * </ul>
 *
 * <p>The {@code copyFrom}/{@code copyTo} methods taking arrays copy through a temporary native
 * buffer (two copies); the ones taking direct buffers copy once. All of them move exactly
 * {@link #bytes()} bytes: a buffer must have exactly {@link #elements()} elements remaining
 * (bytes for a ByteBuffer), an array exactly that length; neither the position nor the limit of
 * a buffer changes.
 *
 * <p>A tensor may be read by several calls at once but written by one.
 */
public final class Tensor extends NativeObject implements AutoCloseable {
    private final Context context;
    /** What a wrapped tensor's memory belongs to (kept reachable): a Buffer or a Reducer. */
    private final Object owner;

    private Tensor(long handle, Context context, Object owner) {
        super(handle);
        this.context = context;
        this.owner = owner;
    }

    /**
     * Creates a tensor that owns its memory on the context's device, zero-filled.
     *
     * @param ctx the context
     * @param dtype the element type
     * @param layout the layout
     * @param dims 3 to 5 dimensions N, C, spatial..., each &gt;= 0
     * @return the tensor
     * @throws InvalidArgumentException for a bad rank or a negative dimension
     * @throws OverflowException if the size overflows
     * @throws OutOfMemoryException if the memory cannot be allocated
     */
    @CFunction("conv_tensor_create")
    public static Tensor create(Context ctx, DType dtype, Layout layout, long... dims) {
        long[] out = new long[1];
        try (Pins p = new Pins()) {
            ConvNative.conv_tensor_create(p.pin(ctx, "ctx"), dtype.value(), layout.value(), dims.length, dims, out);
            Tensor t = new Tensor(out[0], ctx, null);
            ctx.adopt(t);
            return t;
        }
    }

    /**
     * Wraps the remaining floats of a direct buffer in native byte order as a
     * {@link DType#FLOAT32} tensor, without copying (see the class documentation). The tensor
     * covers {@code elements} floats from the buffer's position; the buffer may have more.
     *
     * @param ctx a CPU context
     * @param data a direct buffer in native byte order, e.g.
     *     {@code ByteBuffer.allocateDirect(4 * n).order(ByteOrder.nativeOrder()).asFloatBuffer()}
     * @param layout the layout
     * @param dims 3 to 5 dimensions N, C, spatial...
     * @return the tensor
     * @throws IllegalArgumentException for a heap buffer, a buffer in the wrong byte order, a
     *     read-only buffer, one with too few elements remaining, or a non-CPU context
     */
    @CFunction("conv_tensor_wrap")
    public static Tensor wrap(Context ctx, FloatBuffer data, Layout layout, long... dims) {
        return wrapBuffer(ctx, data, DType.FLOAT32, layout, dims);
    }

    /**
     * Wraps the remaining doubles of a direct buffer in native byte order as a
     * {@link DType#FLOAT64} tensor, without copying; as
     * {@link #wrap(Context, FloatBuffer, Layout, long...)}.
     *
     * @param ctx a CPU context
     * @param data a direct buffer in native byte order
     * @param layout the layout
     * @param dims 3 to 5 dimensions N, C, spatial...
     * @return the tensor
     * @throws IllegalArgumentException for a heap buffer, a buffer in the wrong byte order, a
     *     read-only buffer, one with too few elements remaining, or a non-CPU context
     */
    @CFunction("conv_tensor_wrap")
    public static Tensor wrap(Context ctx, DoubleBuffer data, Layout layout, long... dims) {
        return wrapBuffer(ctx, data, DType.FLOAT64, layout, dims);
    }

    /**
     * Wraps the remaining 16-bit elements of a direct buffer in native byte order as a
     * {@link DType#FLOAT16} or {@link DType#BFLOAT16} tensor, without copying.
     *
     * @param ctx a CPU context
     * @param data a direct buffer in native byte order
     * @param dtype FLOAT16 or BFLOAT16
     * @param layout the layout
     * @param dims 3 to 5 dimensions N, C, spatial...
     * @return the tensor
     * @throws IllegalArgumentException for a heap buffer, a buffer in the wrong byte order, a
     *     read-only buffer, one with too few elements remaining, another dtype, or a non-CPU
     *     context
     */
    @CFunction("conv_tensor_wrap")
    public static Tensor wrap(Context ctx, ShortBuffer data, DType dtype, Layout layout, long... dims) {
        return wrapBuffer(ctx, data, dtype, layout, dims);
    }

    /**
     * Wraps the remaining bytes of a direct buffer in native byte order as a tensor of any
     * dtype, without copying.
     *
     * @param ctx a CPU context
     * @param data a direct buffer in native byte order
     * @param dtype the element type
     * @param layout the layout
     * @param dims 3 to 5 dimensions N, C, spatial...
     * @return the tensor
     * @throws IllegalArgumentException for a heap buffer, a buffer in the wrong byte order, a
     *     read-only buffer, one with too few bytes remaining, or a non-CPU context
     */
    @CFunction("conv_tensor_wrap")
    public static Tensor wrap(Context ctx, ByteBuffer data, DType dtype, Layout layout, long... dims) {
        return wrapBuffer(ctx, data, dtype, layout, dims);
    }

    private static Tensor wrapBuffer(Context ctx, Buffer data, DType dtype, Layout layout, long[] dims) {
        Buffers.checkDirect(data, "data", false);
        Buffers.checkDType(data, dtype, "data");
        if (data.isReadOnly()) throw new IllegalArgumentException("data is read-only: libconv may write a tensor");
        int elementSize = Buffers.elementSize(data);
        // The elements of the buffer the tensor needs; when the product overflows or a dim is
        // negative, C refuses the dims before it looks at the memory.
        long needed = 0;
        try {
            long bytes = dtype.byteSize();
            for (long d : dims) bytes = Math.multiplyExact(bytes, Math.max(d, 0));
            needed = bytes / elementSize;
        } catch (ArithmeticException e) {
            needed = 0;
        }
        if (needed > data.remaining())
            throw new IllegalArgumentException("data has " + data.remaining() + " elements remaining, "
                    + needed + " needed for " + dtype + " " + Arrays.toString(dims));
        Buffer slice = Buffers.slice(data, needed, "data");
        long[] out = new long[1];
        try (Pins p = new Pins()) {
            long c = p.pin(ctx, "ctx");
            if (ctx.device() != Device.CPU)
                throw new IllegalArgumentException("a " + ctx.device() + " context needs device memory: "
                        + "use create() and copyFrom()");
            ConvNative.conv_tensor_wrap(c, dtype.value(), layout.value(), dims.length, dims, slice, out);
            Tensor t = new Tensor(out[0], ctx, slice);
            // Belt and braces: the tensor must never reach past the buffer.
            if (t.bytes() > (long) slice.remaining() * elementSize) {
                t.close();
                throw new IllegalArgumentException("data is too small for " + Arrays.toString(dims));
            }
            ctx.adopt(t);
            return t;
        }
    }

    /**
     * A tensor over native memory at an address that `owner` keeps valid while the tensor is
     * open (a reducer's gradient slot); the caller checked the size, ctx is pinned by it.
     */
    static Tensor wrapAddress(Context ctx, long ctxHandle, long address, DType dtype, Layout layout, long[] dims,
            Object owner) {
        long[] out = new long[1];
        ConvNative.conv_tensor_wrap(ctxHandle, dtype.value(), layout.value(), dims.length, dims, address, out);
        Tensor t = new Tensor(out[0], ctx, owner);
        ctx.adopt(t);
        return t;
    }

    @Override
    String kind() {
        return "tensor";
    }

    /**
     * The context the tensor was created with.
     *
     * @return the context
     */
    public Context context() {
        return context;
    }

    /**
     * Whether the tensor wraps a Java buffer (rather than owning its memory).
     *
     * @return true for a tensor made by {@code wrap}
     */
    public boolean isWrapped() {
        return owner != null;
    }

    /**
     * The kind of device the tensor's memory is on (that of its context).
     *
     * @return the device
     */
    @CFunction("conv_tensor_get_device")
    public Device device() {
        int[] device = new int[1];
        int[] index = new int[1];
        try (Pins p = new Pins()) {
            ConvNative.conv_tensor_get_device(p.pin(this), device, index);
        }
        return Device.fromValue(device[0]);
    }

    /**
     * The index of the device the tensor's memory is on.
     *
     * @return 0 for the CPU, the GPU index for CUDA
     */
    @CFunction("conv_tensor_get_device")
    public int deviceIndex() {
        int[] device = new int[1];
        int[] index = new int[1];
        try (Pins p = new Pins()) {
            ConvNative.conv_tensor_get_device(p.pin(this), device, index);
        }
        return index[0];
    }

    /**
     * Copies another tensor of the same dtype, layout and dims into this one, between any
     * devices (host and GPU, or two GPUs). The two must not overlap unless identical.
     *
     * @param src the source
     * @throws ShapeMismatchException if the dims differ
     * @throws TypeMismatchException if the dtypes or layouts differ
     */
    @CFunction("conv_tensor_copy")
    public void copyFrom(Tensor src) {
        try (Pins p = new Pins()) {
            ConvNative.conv_tensor_copy(p.pin(this), p.pin(src, "src"));
        }
    }

    /**
     * The element type.
     *
     * @return the dtype
     */
    @CFunction("conv_tensor_get_dtype")
    public DType dtype() {
        int[] v = new int[1];
        try (Pins p = new Pins()) {
            ConvNative.conv_tensor_get_dtype(p.pin(this), v);
        }
        return DType.fromValue(v[0]);
    }

    /**
     * The layout.
     *
     * @return the layout
     */
    @CFunction("conv_tensor_get_layout")
    public Layout layout() {
        int[] v = new int[1];
        try (Pins p = new Pins()) {
            ConvNative.conv_tensor_get_layout(p.pin(this), v);
        }
        return Layout.fromValue(v[0]);
    }

    /**
     * The number of dimensions.
     *
     * @return 3, 4 or 5
     */
    @CFunction("conv_tensor_get_ndim")
    public int ndim() {
        int[] v = new int[1];
        try (Pins p = new Pins()) {
            ConvNative.conv_tensor_get_ndim(p.pin(this), v);
        }
        return v[0];
    }

    /**
     * One dimension, in logical order.
     *
     * @param axis 0 = N, 1 = C, 2.. = spatial
     * @return its size
     * @throws InvalidArgumentException if the axis is out of range
     */
    @CFunction("conv_tensor_get_dim")
    public long dim(int axis) {
        long[] v = new long[1];
        try (Pins p = new Pins()) {
            ConvNative.conv_tensor_get_dim(p.pin(this), axis, v);
        }
        return v[0];
    }

    /**
     * All dimensions, N, C, spatial...
     *
     * @return a new array
     */
    @CFunction({"conv_tensor_get_ndim", "conv_tensor_get_dim"})
    public long[] dims() {
        try (Pins p = new Pins()) {
            long h = p.pin(this);
            int[] n = new int[1];
            ConvNative.conv_tensor_get_ndim(h, n);
            long[] dims = new long[n[0]];
            long[] v = new long[1];
            for (int i = 0; i < dims.length; ++i) {
                ConvNative.conv_tensor_get_dim(h, i, v);
                dims[i] = v[0];
            }
            return dims;
        }
    }

    /**
     * The number of elements.
     *
     * @return the product of the dimensions
     */
    @CFunction("conv_tensor_get_elements")
    public long elements() {
        long[] v = new long[1];
        try (Pins p = new Pins()) {
            ConvNative.conv_tensor_get_elements(p.pin(this), v);
        }
        return v[0];
    }

    /**
     * The size of the data in bytes.
     *
     * @return elements times the dtype's size
     */
    @CFunction("conv_tensor_get_bytes")
    public long bytes() {
        long[] v = new long[1];
        try (Pins p = new Pins()) {
            ConvNative.conv_tensor_get_bytes(p.pin(this), v);
        }
        return v[0];
    }

    /**
     * The address of the first element (device memory for a device tensor), for passing to
     * other native code. It is valid while the tensor is open; Java cannot dereference it.
     *
     * @return the address
     */
    @CFunction("conv_tensor_get_data")
    public long dataAddress() {
        long[] v = new long[1];
        try (Pins p = new Pins()) {
            ConvNative.conv_tensor_get_data(p.pin(this), v);
        }
        return v[0];
    }

    // ----------------------------------------------------------------- copies in

    private void copyIn(Object host) {
        try (Pins p = new Pins()) {
            ConvNative.conv_tensor_copy_from(p.pin(this), host);
        }
    }

    private void copyInBuffer(Buffer src) {
        ensureOpen();
        Buffers.checkDirect(src, "src", false);
        Buffers.checkDType(src, dtype(), "src");
        copyIn(src);
    }

    private void copyInArray(Object src, DType... dtypes) {
        ensureOpen();
        if (src == null) throw new NullPointerException("src is null");
        DType dtype = dtype();
        if (!Arrays.asList(dtypes).contains(dtype))
            throw new IllegalArgumentException("a " + src.getClass().getSimpleName() + " does not hold "
                    + dtype + " elements");
        copyIn(src);
    }

    /**
     * Copies the remaining floats of a direct buffer (native byte order) into a FLOAT32 tensor.
     *
     * @param src exactly {@link #elements()} floats remaining
     * @throws IllegalArgumentException for a heap buffer, the wrong byte order or dtype
     * @throws InvalidArgumentException if the size differs from the tensor's
     */
    @CFunction("conv_tensor_copy_from")
    public void copyFrom(FloatBuffer src) {
        copyInBuffer(src);
    }

    /**
     * Copies the remaining doubles of a direct buffer (native byte order) into a FLOAT64 tensor.
     *
     * @param src exactly {@link #elements()} doubles remaining
     * @throws IllegalArgumentException for a heap buffer, the wrong byte order or dtype
     * @throws InvalidArgumentException if the size differs from the tensor's
     */
    @CFunction("conv_tensor_copy_from")
    public void copyFrom(DoubleBuffer src) {
        copyInBuffer(src);
    }

    /**
     * Copies the remaining 16-bit elements of a direct buffer (native byte order) into a
     * FLOAT16 or BFLOAT16 tensor.
     *
     * @param src exactly {@link #elements()} elements remaining
     * @throws IllegalArgumentException for a heap buffer, the wrong byte order or dtype
     * @throws InvalidArgumentException if the size differs from the tensor's
     */
    @CFunction("conv_tensor_copy_from")
    public void copyFrom(ShortBuffer src) {
        copyInBuffer(src);
    }

    /**
     * Copies the remaining bytes of a direct buffer (native byte order) into a tensor of any
     * dtype.
     *
     * @param src exactly {@link #bytes()} bytes remaining
     * @throws IllegalArgumentException for a heap buffer or the wrong byte order
     * @throws InvalidArgumentException if the size differs from the tensor's
     */
    @CFunction("conv_tensor_copy_from")
    public void copyFrom(ByteBuffer src) {
        copyInBuffer(src);
    }

    /**
     * Copies an array into a FLOAT32 tensor (through a temporary copy).
     *
     * @param src exactly {@link #elements()} floats
     * @throws IllegalArgumentException if the tensor is not FLOAT32
     * @throws InvalidArgumentException if the length differs from the tensor's
     */
    @CFunction("conv_tensor_copy_from")
    public void copyFrom(float[] src) {
        copyInArray(src, DType.FLOAT32);
    }

    /**
     * Copies an array into a FLOAT64 tensor (through a temporary copy).
     *
     * @param src exactly {@link #elements()} doubles
     * @throws IllegalArgumentException if the tensor is not FLOAT64
     * @throws InvalidArgumentException if the length differs from the tensor's
     */
    @CFunction("conv_tensor_copy_from")
    public void copyFrom(double[] src) {
        copyInArray(src, DType.FLOAT64);
    }

    /**
     * Copies an array of raw 16-bit values into a FLOAT16 or BFLOAT16 tensor.
     *
     * @param src exactly {@link #elements()} values
     * @throws IllegalArgumentException if the tensor is not FLOAT16 or BFLOAT16
     * @throws InvalidArgumentException if the length differs from the tensor's
     */
    @CFunction("conv_tensor_copy_from")
    public void copyFrom(short[] src) {
        copyInArray(src, DType.FLOAT16, DType.BFLOAT16);
    }

    /**
     * Copies raw bytes (native byte order) into a tensor of any dtype.
     *
     * @param src exactly {@link #bytes()} bytes
     * @throws InvalidArgumentException if the length differs from the tensor's size
     */
    @CFunction("conv_tensor_copy_from")
    public void copyFrom(byte[] src) {
        copyInArray(src, DType.values());
    }

    // ---------------------------------------------------------------- copies out

    private void copyOut(Object host) {
        try (Pins p = new Pins()) {
            ConvNative.conv_tensor_copy_to(p.pin(this), host);
        }
    }

    private void copyOutBuffer(Buffer dst) {
        ensureOpen();
        Buffers.checkDirect(dst, "dst", false);
        Buffers.checkWritable(dst, "dst");
        Buffers.checkDType(dst, dtype(), "dst");
        copyOut(dst);
    }

    private void copyOutArray(Object dst, DType... dtypes) {
        ensureOpen();
        if (dst == null) throw new NullPointerException("dst is null");
        DType dtype = dtype();
        if (!Arrays.asList(dtypes).contains(dtype))
            throw new IllegalArgumentException("a " + dst.getClass().getSimpleName() + " does not hold "
                    + dtype + " elements");
        copyOut(dst);
    }

    /**
     * Copies a FLOAT32 tensor into the remaining floats of a direct buffer (native byte order).
     *
     * @param dst exactly {@link #elements()} floats remaining
     * @throws IllegalArgumentException for a heap buffer, the wrong byte order or dtype
     * @throws java.nio.ReadOnlyBufferException for a read-only buffer
     * @throws InvalidArgumentException if the size differs from the tensor's
     */
    @CFunction("conv_tensor_copy_to")
    public void copyTo(FloatBuffer dst) {
        copyOutBuffer(dst);
    }

    /**
     * Copies a FLOAT64 tensor into the remaining doubles of a direct buffer (native byte order).
     *
     * @param dst exactly {@link #elements()} doubles remaining
     * @throws IllegalArgumentException for a heap buffer, the wrong byte order or dtype
     * @throws java.nio.ReadOnlyBufferException for a read-only buffer
     * @throws InvalidArgumentException if the size differs from the tensor's
     */
    @CFunction("conv_tensor_copy_to")
    public void copyTo(DoubleBuffer dst) {
        copyOutBuffer(dst);
    }

    /**
     * Copies a FLOAT16 or BFLOAT16 tensor into the remaining elements of a direct buffer.
     *
     * @param dst exactly {@link #elements()} elements remaining
     * @throws IllegalArgumentException for a heap buffer, the wrong byte order or dtype
     * @throws java.nio.ReadOnlyBufferException for a read-only buffer
     * @throws InvalidArgumentException if the size differs from the tensor's
     */
    @CFunction("conv_tensor_copy_to")
    public void copyTo(ShortBuffer dst) {
        copyOutBuffer(dst);
    }

    /**
     * Copies a tensor of any dtype into the remaining bytes of a direct buffer.
     *
     * @param dst exactly {@link #bytes()} bytes remaining
     * @throws IllegalArgumentException for a heap buffer or the wrong byte order
     * @throws java.nio.ReadOnlyBufferException for a read-only buffer
     * @throws InvalidArgumentException if the size differs from the tensor's
     */
    @CFunction("conv_tensor_copy_to")
    public void copyTo(ByteBuffer dst) {
        copyOutBuffer(dst);
    }

    /**
     * Copies a FLOAT32 tensor into an array (through a temporary copy).
     *
     * @param dst exactly {@link #elements()} floats
     * @throws IllegalArgumentException if the tensor is not FLOAT32
     * @throws InvalidArgumentException if the length differs from the tensor's
     */
    @CFunction("conv_tensor_copy_to")
    public void copyTo(float[] dst) {
        copyOutArray(dst, DType.FLOAT32);
    }

    /**
     * Copies a FLOAT64 tensor into an array (through a temporary copy).
     *
     * @param dst exactly {@link #elements()} doubles
     * @throws IllegalArgumentException if the tensor is not FLOAT64
     * @throws InvalidArgumentException if the length differs from the tensor's
     */
    @CFunction("conv_tensor_copy_to")
    public void copyTo(double[] dst) {
        copyOutArray(dst, DType.FLOAT64);
    }

    /**
     * Copies a FLOAT16 or BFLOAT16 tensor into an array of raw 16-bit values.
     *
     * @param dst exactly {@link #elements()} values
     * @throws IllegalArgumentException if the tensor is not FLOAT16 or BFLOAT16
     * @throws InvalidArgumentException if the length differs from the tensor's
     */
    @CFunction("conv_tensor_copy_to")
    public void copyTo(short[] dst) {
        copyOutArray(dst, DType.FLOAT16, DType.BFLOAT16);
    }

    /**
     * Copies a tensor of any dtype into an array of raw bytes (native byte order).
     *
     * @param dst exactly {@link #bytes()} bytes
     * @throws InvalidArgumentException if the length differs from the tensor's size
     */
    @CFunction("conv_tensor_copy_to")
    public void copyTo(byte[] dst) {
        copyOutArray(dst, DType.values());
    }

    /**
     * The contents of a FLOAT32 tensor as a new array.
     *
     * @return the elements in storage order
     * @throws IllegalArgumentException if the tensor is not FLOAT32
     */
    @CFunction("conv_tensor_copy_to")
    public float[] toFloatArray() {
        float[] a = new float[Math.toIntExact(elements())];
        copyTo(a);
        return a;
    }

    /**
     * The contents of a FLOAT64 tensor as a new array.
     *
     * @return the elements in storage order
     * @throws IllegalArgumentException if the tensor is not FLOAT64
     */
    @CFunction("conv_tensor_copy_to")
    public double[] toDoubleArray() {
        double[] a = new double[Math.toIntExact(elements())];
        copyTo(a);
        return a;
    }

    @Override
    void destroy(long handle) {
        ConvNative.conv_tensor_destroy(handle);
        context.forget(this);
        if (owner instanceof Reducer) ((Reducer) owner).forget(this);
    }

    /**
     * Frees the tensor (a wrapped buffer stays the caller's). Waits for calls running on other
     * threads; does nothing the second time.
     */
    @Override
    @CFunction("conv_tensor_destroy")
    public void close() {
        closeHandle();
    }

    @Override
    public String toString() {
        if (isClosed()) return "Tensor(closed)";
        try {
            return "Tensor(" + dtype() + ", " + layout() + ", " + Arrays.toString(dims()) + ")";
        } catch (IllegalStateException e) {
            return "Tensor(closed)";
        }
    }
}
