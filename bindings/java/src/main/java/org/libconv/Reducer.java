package org.libconv;

import java.nio.Buffer;
import java.nio.ByteBuffer;
import java.nio.DoubleBuffer;
import java.nio.FloatBuffer;
import java.nio.ShortBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Averages a network's gradients across the ranks of a {@link Communicator}, bucket by bucket
 * while backward still runs, and applies a fused SGD step ({@code conv_reducer_t}; the way
 * NVCaffe and PyTorch DDP do it; see conv.h):
 * <pre>
 * try (Reducer r = Reducer.create(comm, DType.FLOAT32)) {
 *     for (FloatBuffer weights : parametersInForwardOrder) r.addParam(weights);
 *     r.setup();                  // collective
 *     r.broadcastParams(0);       // collective: rank 0's weights everywhere
 *     Tensor dw = r.gradTensor(ctx, 0, Layout.CHANNELS_FIRST, 16, 3, 3, 3);
 *     each step:
 *         conv.backwardFilter(ctx, x, dy, dw, null);   // writes straight into the reducer
 *         r.markReady(0);          // ... for every parameter, as its gradient is complete
 *         r.finish();              // gradients averaged over the ranks
 *         r.applySgd(0.01, 0.9, 1e-4);
 * }
 * </pre>
 *
 * <p>The reducer owns one flat gradient buffer on the communicator's device; each parameter's
 * gradient has a slot there, which {@link #gradTensor} wraps as a tensor without copying. One
 * call at a time per reducer, except {@link #markReady} and {@link #markUnused}, which several
 * threads may call at once. Weights given to {@code addParam} are direct buffers the reducer
 * keeps referenced (host memory: LOCAL and MPI communicators).
 */
public final class Reducer extends NativeObject implements AutoCloseable {
    private final Communicator communicator;
    private final DType dtype;
    private final List<Long> counts = new ArrayList<>();
    private final List<Buffer> weights = new ArrayList<>(); // kept reachable while the reducer lives
    private final Set<Tensor> gradTensors = ConcurrentHashMap.newKeySet();

    private Reducer(long handle, Communicator communicator, DType dtype) {
        super(handle);
        this.communicator = communicator;
        this.dtype = dtype;
    }

    /**
     * Creates a reducer over a communicator, for gradients and weights of one dtype.
     *
     * @param comm the communicator (kept alive by the reducer)
     * @param dtype FLOAT32, FLOAT64, FLOAT16 or BFLOAT16
     * @return the reducer
     */
    @CFunction("conv_reducer_create")
    public static Reducer create(Communicator comm, DType dtype) {
        long[] out = new long[1];
        try (Pins p = new Pins()) {
            ConvNative.conv_reducer_create(p.pin(comm, "comm"), dtype.value(), out);
        }
        return new Reducer(out[0], comm, dtype);
    }

    @Override
    String kind() {
        return "reducer";
    }

    /**
     * The communicator the reducer runs on.
     *
     * @return the communicator
     */
    public Communicator communicator() {
        return communicator;
    }

    /**
     * The dtype of the gradients and weights.
     *
     * @return the dtype
     */
    public DType dtype() {
        return dtype;
    }

    // ------------------------------------------------------------------ layout

    private int addParamMemory(Buffer weights, long count) {
        int[] index = new int[1];
        synchronized (counts) {
            try (Pins p = new Pins()) {
                ConvNative.conv_reducer_add_param(p.pin(this), weights, count, index);
            }
            counts.add(count);
            if (weights != null) this.weights.add(weights);
        }
        return index[0];
    }

    private int addParamBuffer(Buffer weights) {
        ensureOpen();
        Buffers.checkDirect(weights, "weights", false);
        Buffers.checkDType(weights, dtype, "weights");
        if (weights.isReadOnly())
            throw new IllegalArgumentException("weights is read-only: broadcastParams and applySgd write it");
        if (communicator.device() != Device.CPU)
            throw new IllegalArgumentException("a reducer on " + communicator.device() + " needs device memory");
        long bytes = (long) weights.remaining() * Buffers.elementSize(weights);
        if (bytes % dtype.byteSize() != 0)
            throw new IllegalArgumentException("weights has " + bytes + " bytes, not a whole number of " + dtype);
        long count = bytes / dtype.byteSize();
        return addParamMemory(Buffers.slice(weights, weights.remaining(), "weights"), count);
    }

    /**
     * Registers a parameter (in forward order) whose weights are the floats between position
     * and limit of a direct buffer (FLOAT32 reducer), kept referenced by the reducer. Before
     * {@link #setup()} only.
     *
     * @param weights the weights, direct, in native byte order
     * @return the parameter's index: 0, 1, ...
     */
    @CFunction("conv_reducer_add_param")
    public int addParam(FloatBuffer weights) {
        return addParamBuffer(weights);
    }

    /**
     * Registers a parameter whose weights are the doubles of a direct buffer (FLOAT64 reducer).
     *
     * @param weights the weights, direct, in native byte order
     * @return the parameter's index
     */
    @CFunction("conv_reducer_add_param")
    public int addParam(DoubleBuffer weights) {
        return addParamBuffer(weights);
    }

    /**
     * Registers a parameter whose weights are the 16-bit elements of a direct buffer (FLOAT16 or
     * BFLOAT16 reducer).
     *
     * @param weights the weights, direct, in native byte order
     * @return the parameter's index
     */
    @CFunction("conv_reducer_add_param")
    public int addParam(ShortBuffer weights) {
        return addParamBuffer(weights);
    }

    /**
     * Registers a parameter whose weights are the bytes of a direct buffer (a whole number of
     * elements of the reducer's dtype).
     *
     * @param weights the weights, direct, in native byte order
     * @return the parameter's index
     */
    @CFunction("conv_reducer_add_param")
    public int addParam(ByteBuffer weights) {
        return addParamBuffer(weights);
    }

    /**
     * Registers a parameter of {@code count} elements without weights (then neither
     * {@link #broadcastParams} nor {@link #applySgd} may be used, on any rank).
     *
     * @param count &gt;= 1
     * @return the parameter's index
     */
    @CFunction("conv_reducer_add_param")
    public int addParam(long count) {
        return addParamMemory(null, count);
    }

    /**
     * PyTorch DDP's bucket rule: the first bucket closes at {@code firstBucketBytes}, the others
     * at {@code bucketBytes} (default 1 MiB and 25 MiB). Before setup only.
     *
     * @param firstBucketBytes &gt;= 1
     * @param bucketBytes &gt;= 1
     * @return this reducer
     */
    @CFunction("conv_reducer_set_bucket_bytes")
    public Reducer setBucketBytes(long firstBucketBytes, long bucketBytes) {
        try (Pins p = new Pins()) {
            ConvNative.conv_reducer_set_bucket_bytes(p.pin(this), firstBucketBytes, bucketBytes);
        }
        return this;
    }

    /**
     * NVCaffe's bucket rule: every bucket closes at ceil(total bytes / buckets). Before setup
     * only.
     *
     * @param buckets 1..65536
     * @return this reducer
     */
    @CFunction("conv_reducer_set_bucket_count")
    public Reducer setBucketCount(int buckets) {
        try (Pins p = new Pins()) {
            ConvNative.conv_reducer_set_bucket_count(p.pin(this), buckets);
        }
        return this;
    }

    /**
     * NCCL: the CUDA stream backward runs on, by address (0: the legacy default stream).
     *
     * @param cudaStream the stream's address
     * @return this reducer
     * @throws UnsupportedException for LOCAL and MPI
     */
    @CFunction("conv_reducer_set_stream")
    public Reducer setStream(long cudaStream) {
        try (Pins p = new Pins()) {
            ConvNative.conv_reducer_set_stream(p.pin(this), cudaStream);
        }
        return this;
    }

    /**
     * Lays out the buckets, allocates the gradient buffer (zero-filled) and checks,
     * collectively, that every rank registered the same parameters.
     *
     * @throws ShapeMismatchException on every rank if the ranks' parameters differ
     */
    @CFunction("conv_reducer_setup")
    public void setup() {
        try (Pins p = new Pins()) {
            ConvNative.conv_reducer_setup(p.pin(this));
        }
    }

    /**
     * The number of parameters.
     *
     * @return the count
     */
    @CFunction("conv_reducer_get_param_count")
    public int paramCount() {
        int[] v = new int[1];
        try (Pins p = new Pins()) {
            ConvNative.conv_reducer_get_param_count(p.pin(this), v);
        }
        return v[0];
    }

    /**
     * The number of buckets (after setup).
     *
     * @return the count
     */
    @CFunction("conv_reducer_get_bucket_count")
    public int bucketCount() {
        int[] v = new int[1];
        try (Pins p = new Pins()) {
            ConvNative.conv_reducer_get_bucket_count(p.pin(this), v);
        }
        return v[0];
    }

    /** A bucket of the gradient buffer ({@link #bucket(int)}), in elements of the dtype. */
    public static final class Bucket {
        private final long offset;
        private final long elements;
        private final int params;

        Bucket(long offset, long elements, int params) {
            this.offset = offset;
            this.elements = elements;
            this.params = params;
        }

        /**
         * Where the bucket starts in the gradient buffer.
         *
         * @return the offset in elements
         */
        public long offset() {
            return offset;
        }

        /**
         * The elements it covers (its parameters' slots and the padding between them).
         *
         * @return the count
         */
        public long elements() {
            return elements;
        }

        /**
         * How many parameters it holds.
         *
         * @return the count
         */
        public int params() {
            return params;
        }

        @Override
        public String toString() {
            return "Bucket(offset " + offset + ", " + elements + " elements, " + params + " params)";
        }
    }

    /**
     * A bucket (after setup): 0 is reduced first.
     *
     * @param bucket 0..bucketCount()-1
     * @return its range and parameter count
     */
    @CFunction("conv_reducer_get_bucket")
    public Bucket bucket(int bucket) {
        long[] offset = new long[1];
        long[] elements = new long[1];
        int[] params = new int[1];
        try (Pins p = new Pins()) {
            ConvNative.conv_reducer_get_bucket(p.pin(this), bucket, offset, elements, params);
        }
        return new Bucket(offset[0], elements[0], params[0]);
    }

    /**
     * The bucket a parameter's gradient is in (after setup).
     *
     * @param param the parameter's index
     * @return the bucket
     */
    @CFunction("conv_reducer_get_param_slot")
    public int paramBucket(int param) {
        int[] bucket = new int[1];
        long[] offset = new long[1];
        try (Pins p = new Pins()) {
            ConvNative.conv_reducer_get_param_slot(p.pin(this), param, bucket, offset);
        }
        return bucket[0];
    }

    /**
     * Where a parameter's gradient slot starts in the gradient buffer (after setup).
     *
     * @param param the parameter's index
     * @return the offset in elements
     */
    @CFunction("conv_reducer_get_param_slot")
    public long paramOffset(int param) {
        int[] bucket = new int[1];
        long[] offset = new long[1];
        try (Pins p = new Pins()) {
            ConvNative.conv_reducer_get_param_slot(p.pin(this), param, bucket, offset);
        }
        return offset[0];
    }

    /**
     * The address of a parameter's gradient slot (for other native code; valid until the
     * reducer is closed).
     *
     * @param param the parameter's index
     * @return the address
     */
    @CFunction("conv_reducer_get_grad")
    public long gradAddress(int param) {
        long[] grad = new long[1];
        try (Pins p = new Pins()) {
            ConvNative.conv_reducer_get_grad(p.pin(this), param, grad);
        }
        return grad[0];
    }

    /**
     * A tensor over a parameter's gradient slot, without copying: pass it as the dw of
     * {@link Conv#backwardFilter} and backward writes straight into the reducer's buffer. The
     * tensor is closed with the reducer (or its context), whichever comes first.
     *
     * @param ctx a context on the communicator's device
     * @param param the parameter's index (after setup)
     * @param layout the layout
     * @param dims dims whose product is the parameter's element count
     * @return the tensor
     * @throws IllegalArgumentException if the dims or the device do not fit
     */
    @CFunction({"conv_reducer_get_grad", "conv_tensor_wrap"})
    public Tensor gradTensor(Context ctx, int param, Layout layout, long... dims) {
        ensureOpen();
        long count;
        synchronized (counts) {
            if (param < 0 || param >= counts.size())
                throw new IllegalArgumentException("no parameter " + param + " (" + counts.size() + " registered)");
            count = counts.get(param);
        }
        long product = 1;
        for (long d : dims) product *= d;
        if (product != count)
            throw new IllegalArgumentException("dims of " + product + " elements for a parameter of " + count);
        try (Pins p = new Pins()) {
            long h = p.pin(this);
            long c = p.pin(ctx, "ctx");
            if (ctx.device() != communicator.device() || ctx.deviceIndex() != communicator.deviceIndex())
                throw new IllegalArgumentException("the context is on " + ctx.device() + ":" + ctx.deviceIndex()
                        + ", the reducer's memory on " + communicator.device() + ":" + communicator.deviceIndex());
            long[] grad = new long[1];
            ConvNative.conv_reducer_get_grad(h, param, grad);
            Tensor t = Tensor.wrapAddress(ctx, c, grad[0], dtype, layout, dims, this);
            gradTensors.add(t);
            return t;
        }
    }

    /** Called by a closed gradient tensor. */
    void forget(Tensor t) {
        gradTensors.remove(t);
    }

    /**
     * The address of the whole gradient buffer (after setup).
     *
     * @return the address
     */
    @CFunction("conv_reducer_get_buffer")
    public long bufferAddress() {
        long[] grads = new long[1];
        long[] elements = new long[1];
        try (Pins p = new Pins()) {
            ConvNative.conv_reducer_get_buffer(p.pin(this), grads, elements);
        }
        return grads[0];
    }

    /**
     * The size of the whole gradient buffer (slots, padding and a few elements of the reducer's
     * own).
     *
     * @return elements of the dtype
     */
    @CFunction("conv_reducer_get_buffer")
    public long bufferElements() {
        long[] grads = new long[1];
        long[] elements = new long[1];
        try (Pins p = new Pins()) {
            ConvNative.conv_reducer_get_buffer(p.pin(this), grads, elements);
        }
        return elements[0];
    }

    // ------------------------------------------------------------------- steps

    /**
     * Copies rank root's weights of every parameter to the other ranks. Collective; needs every
     * parameter's weights; not during a step.
     *
     * @param root the rank whose weights win
     */
    @CFunction("conv_reducer_broadcast_params")
    public void broadcastParams(int root) {
        try (Pins p = new Pins()) {
            ConvNative.conv_reducer_broadcast_params(p.pin(this), root);
        }
    }

    /**
     * A parameter's gradient is complete in its slot; may start its bucket's reduction. Several
     * threads may call it at once.
     *
     * @param param the parameter's index
     * @throws InvalidArgumentException if it was already marked in this step
     * @throws BackendErrorException once a reduction of this step has failed
     */
    @CFunction("conv_reducer_mark_ready")
    public void markReady(int param) {
        try (Pins p = new Pins()) {
            ConvNative.conv_reducer_mark_ready(p.pin(this), param);
        }
    }

    /**
     * A parameter has no gradient this step: its slot is zero-filled and it counts as ready.
     *
     * @param param the parameter's index
     */
    @CFunction("conv_reducer_mark_unused")
    public void markUnused(int param) {
        try (Pins p = new Pins()) {
            ConvNative.conv_reducer_mark_unused(p.pin(this), param);
        }
    }

    /**
     * Ends the step: waits for every bucket's reduction (host), after which each slot holds the
     * average over the ranks.
     *
     * @throws InvalidArgumentException if a parameter was neither marked ready nor unused (every
     *     bucket is still reduced, so no rank hangs)
     * @throws BackendErrorException when a reduction failed (timeout, abort)
     */
    @CFunction("conv_reducer_finish")
    public void finish() {
        try (Pins p = new Pins()) {
            ConvNative.conv_reducer_finish(p.pin(this));
        }
    }

    /**
     * The fused SGD update over every parameter, after {@link #finish()}:
     * {@code h = momentum * h + learningRate * (g + weightDecay * w); w = w - h}.
     *
     * @param learningRate the learning rate
     * @param momentum the momentum
     * @param weightDecay the L2 weight decay
     */
    @CFunction("conv_reducer_apply_sgd")
    public void applySgd(double learningRate, double momentum, double weightDecay) {
        try (Pins p = new Pins()) {
            ConvNative.conv_reducer_apply_sgd(p.pin(this), learningRate, momentum, weightDecay);
        }
    }

    /**
     * Timings of the last finished step (host backends): {communication, exposed} in seconds,
     * where communication is the time the reductions took and exposed the part of it
     * {@link #finish()} waited for.
     *
     * @return two values, 0 before any step
     */
    @CFunction("conv_reducer_get_step_times")
    public double[] stepTimes() {
        double[] communication = new double[1];
        double[] exposed = new double[1];
        try (Pins p = new Pins()) {
            ConvNative.conv_reducer_get_step_times(p.pin(this), communication, exposed);
        }
        return new double[] {communication[0], exposed[0]};
    }

    @Override
    void beforeDestroy() {
        for (Tensor t : new ArrayList<>(gradTensors)) t.close();
        gradTensors.clear();
    }

    @Override
    void destroy(long handle) {
        ConvNative.conv_reducer_destroy(handle);
    }

    /**
     * Closes the gradient tensors made by {@link #gradTensor}, then destroys the reducer
     * (aborting its communicator if a step is in flight). Does nothing the second time.
     */
    @Override
    @CFunction("conv_reducer_destroy")
    public void close() {
        closeHandle();
    }
}
