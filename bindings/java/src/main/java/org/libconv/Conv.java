package org.libconv;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.ReadWriteLock;
import java.util.concurrent.locks.ReentrantReadWriteLock;

/**
 * A convolution descriptor ({@code conv_desc_t}) and the passes that use it.
 *
 * <p>A descriptor belongs to no context and may be used with any. Its defaults: strides 1,
 * dilations 1, padding 0, {@link AutoPad#NOTSET}, 1 group, {@link Activation#NONE},
 * {@link Mode#CONVOLUTION}, {@link Algorithm#AUTO} for every pass. Setters return {@code this}:
 * <pre>
 * try (Conv conv = new Conv(2).setStrides(2, 2).setPadding(1, 1).setGroups(4)) {
 *     long[] yDims = conv.outputDims(x, w);
 *     conv.forward(ctx, x, w, bias, y);
 * }
 * </pre>
 *
 * <p>Thread safety: the passes may run on several threads at once; a setter waits until the
 * passes running on the descriptor have finished (C forbids changing a descriptor in use).
 *
 * <p>Dimensions follow conv.h: x (N, C, spatial...), filter w (K, C/groups, kernel...), output
 * y (N, K, out...); in {@link Mode#TRANSPOSED} mode w is (Cin, Cout/groups, kernel...). The
 * passes overwrite their outputs; they check every argument before writing anything, so a
 * failed call leaves the outputs untouched.
 */
public final class Conv extends NativeObject implements AutoCloseable {
    private final int spatialDims;
    private final ReadWriteLock lock = new ReentrantReadWriteLock();

    /**
     * Creates a descriptor with the defaults.
     *
     * @param spatialDims 1, 2 or 3
     * @throws InvalidArgumentException if out of range
     */
    @CFunction("conv_desc_create")
    public Conv(int spatialDims) {
        super(create(spatialDims));
        this.spatialDims = spatialDims;
    }

    private static long create(int spatialDims) {
        long[] out = new long[1];
        ConvNative.conv_desc_create(spatialDims, out);
        return out[0];
    }

    @Override
    String kind() {
        return "convolution descriptor";
    }

    /**
     * The number of spatial dimensions.
     *
     * @return 1, 2 or 3
     */
    @CFunction("conv_desc_get_spatial_dims")
    public int spatialDims() {
        int[] v = new int[1];
        try (Pins p = new Pins()) {
            ConvNative.conv_desc_get_spatial_dims(p.pin(this), v);
        }
        return v[0];
    }

    // ------------------------------------------------------------------ helpers

    private interface Call {
        void run(long desc);
    }

    /** Runs a setter: exclusive with the passes. */
    private Conv set(Call call) {
        Lock l = lock.writeLock();
        l.lock();
        try (Pins p = new Pins()) {
            call.run(p.pin(this));
        } finally {
            l.unlock();
        }
        return this;
    }

    /** Runs a getter. */
    private void get(Call call) {
        Lock l = lock.readLock();
        l.lock();
        try (Pins p = new Pins()) {
            call.run(p.pin(this));
        } finally {
            l.unlock();
        }
    }

    private long[] perAxis(long[] values, String name) {
        ensureOpen();
        if (values == null) throw new NullPointerException(name + " is null");
        if (values.length != spatialDims)
            throw new IllegalArgumentException(name + " has " + values.length + " values for "
                    + spatialDims + " spatial dims");
        return values;
    }

    // ------------------------------------------------------------------ geometry

    /**
     * Sets the strides, one per spatial axis (D, H, W order), each &gt;= 1.
     *
     * @param strides the strides
     * @return this descriptor
     * @throws IllegalArgumentException if the count is not {@link #spatialDims()}
     * @throws InvalidArgumentException if a value is out of range
     */
    @CFunction("conv_desc_set_strides")
    public Conv setStrides(long... strides) {
        perAxis(strides, "strides");
        return set(d -> ConvNative.conv_desc_set_strides(d, strides));
    }

    /**
     * The strides.
     *
     * @return one per spatial axis
     */
    @CFunction("conv_desc_get_strides")
    public long[] getStrides() {
        long[] v = new long[spatialDims];
        get(d -> ConvNative.conv_desc_get_strides(d, v));
        return v;
    }

    /**
     * Sets the dilations, one per spatial axis, each &gt;= 1.
     *
     * @param dilations the dilations
     * @return this descriptor
     * @throws IllegalArgumentException if the count is not {@link #spatialDims()}
     * @throws InvalidArgumentException if a value is out of range
     */
    @CFunction("conv_desc_set_dilations")
    public Conv setDilations(long... dilations) {
        perAxis(dilations, "dilations");
        return set(d -> ConvNative.conv_desc_set_dilations(d, dilations));
    }

    /**
     * The dilations.
     *
     * @return one per spatial axis
     */
    @CFunction("conv_desc_get_dilations")
    public long[] getDilations() {
        long[] v = new long[spatialDims];
        get(d -> ConvNative.conv_desc_get_dilations(d, v));
        return v;
    }

    /**
     * Sets explicit, possibly asymmetric padding (used while the auto-pad mode is
     * {@link AutoPad#NOTSET}).
     *
     * @param begin padding before each spatial axis, each &gt;= 0
     * @param end padding after each spatial axis, each &gt;= 0
     * @return this descriptor
     * @throws IllegalArgumentException if a count is not {@link #spatialDims()}
     * @throws InvalidArgumentException if a value is negative
     */
    @CFunction("conv_desc_set_padding")
    public Conv setPadding(long[] begin, long[] end) {
        perAxis(begin, "begin");
        perAxis(end, "end");
        return set(d -> ConvNative.conv_desc_set_padding(d, begin, end));
    }

    /**
     * Sets symmetric padding: the same before and after each spatial axis.
     *
     * @param padding one value per spatial axis, each &gt;= 0
     * @return this descriptor
     * @throws IllegalArgumentException if the count is not {@link #spatialDims()}
     * @throws InvalidArgumentException if a value is negative
     */
    @CFunction("conv_desc_set_padding")
    public Conv setPadding(long... padding) {
        return setPadding(padding, padding);
    }

    /**
     * The explicit padding before each spatial axis.
     *
     * @return one value per spatial axis
     */
    @CFunction("conv_desc_get_padding")
    public long[] getPaddingBegin() {
        long[] begin = new long[spatialDims];
        long[] end = new long[spatialDims];
        get(d -> ConvNative.conv_desc_get_padding(d, begin, end));
        return begin;
    }

    /**
     * The explicit padding after each spatial axis.
     *
     * @return one value per spatial axis
     */
    @CFunction("conv_desc_get_padding")
    public long[] getPaddingEnd() {
        long[] begin = new long[spatialDims];
        long[] end = new long[spatialDims];
        get(d -> ConvNative.conv_desc_get_padding(d, begin, end));
        return end;
    }

    /**
     * Sets the auto-pad mode; when not {@link AutoPad#NOTSET} it overrides the explicit padding.
     *
     * @param mode the mode
     * @return this descriptor
     */
    @CFunction("conv_desc_set_auto_pad")
    public Conv setAutoPad(AutoPad mode) {
        ensureOpen();
        int v = mode.value();
        return set(d -> ConvNative.conv_desc_set_auto_pad(d, v));
    }

    /**
     * The auto-pad mode.
     *
     * @return the mode
     */
    @CFunction("conv_desc_get_auto_pad")
    public AutoPad getAutoPad() {
        int[] v = new int[1];
        get(d -> ConvNative.conv_desc_get_auto_pad(d, v));
        return AutoPad.fromValue(v[0]);
    }

    /**
     * Sets the number of groups; input and output channels must both be divisible by it
     * (groups == C is a depthwise convolution).
     *
     * @param groups &gt;= 1
     * @return this descriptor
     * @throws InvalidArgumentException if less than 1
     */
    @CFunction("conv_desc_set_groups")
    public Conv setGroups(long groups) {
        return set(d -> ConvNative.conv_desc_set_groups(d, groups));
    }

    /**
     * The number of groups.
     *
     * @return the groups
     */
    @CFunction("conv_desc_get_groups")
    public long getGroups() {
        long[] v = new long[1];
        get(d -> ConvNative.conv_desc_get_groups(d, v));
        return v[0];
    }

    /**
     * Sets the activation fused into {@link #forward} (after the bias). The backward passes take
     * dy as the gradient before the activation: for ReLU mask it with (y &gt; 0) first.
     *
     * @param activation the activation
     * @return this descriptor
     */
    @CFunction("conv_desc_set_activation")
    public Conv setActivation(Activation activation) {
        ensureOpen();
        int v = activation.value();
        return set(d -> ConvNative.conv_desc_set_activation(d, v));
    }

    /**
     * The fused activation.
     *
     * @return the activation
     */
    @CFunction("conv_desc_get_activation")
    public Activation getActivation() {
        int[] v = new int[1];
        get(d -> ConvNative.conv_desc_get_activation(d, v));
        return Activation.fromValue(v[0]);
    }

    /**
     * Sets convolution or transposed convolution.
     *
     * @param mode the mode
     * @return this descriptor
     */
    @CFunction("conv_desc_set_mode")
    public Conv setMode(Mode mode) {
        ensureOpen();
        int v = mode.value();
        return set(d -> ConvNative.conv_desc_set_mode(d, v));
    }

    /**
     * The mode.
     *
     * @return the mode
     */
    @CFunction("conv_desc_get_mode")
    public Mode getMode() {
        int[] v = new int[1];
        get(d -> ConvNative.conv_desc_get_mode(d, v));
        return Mode.fromValue(v[0]);
    }

    /**
     * Sets the output padding of a transposed convolution: extra rows at the end of each output
     * axis, each smaller than the stride or the dilation of its axis (checked when a pass runs).
     * Ignored in {@link Mode#CONVOLUTION} mode.
     *
     * @param padding one value per spatial axis
     * @return this descriptor
     * @throws IllegalArgumentException if the count is not {@link #spatialDims()}
     * @throws InvalidArgumentException if a value is negative
     */
    @CFunction("conv_desc_set_output_padding")
    public Conv setOutputPadding(long... padding) {
        perAxis(padding, "padding");
        return set(d -> ConvNative.conv_desc_set_output_padding(d, padding));
    }

    /**
     * The output padding.
     *
     * @return one value per spatial axis
     */
    @CFunction("conv_desc_get_output_padding")
    public long[] getOutputPadding() {
        long[] v = new long[spatialDims];
        get(d -> ConvNative.conv_desc_get_output_padding(d, v));
        return v;
    }

    /**
     * Forces an algorithm for one pass ({@link Algorithm#AUTO} restores libconv's choice). A
     * forced algorithm that does not apply to a problem makes the pass fail with
     * {@link UnsupportedException}.
     *
     * @param op the pass
     * @param algorithm the algorithm
     * @return this descriptor
     */
    @CFunction("conv_desc_set_algorithm")
    public Conv setAlgorithm(Op op, Algorithm algorithm) {
        ensureOpen();
        int o = op.value();
        int a = algorithm.value();
        return set(d -> ConvNative.conv_desc_set_algorithm(d, o, a));
    }

    /**
     * Forces an algorithm for one pass by the name of its solver, as {@link Algorithm#libraryName()}
     * and the verbose trace give it ({@code "winograd_4x4_3x3"}; {@code "auto"} restores
     * libconv's choice). Also names solvers that have no {@link Algorithm} constant.
     *
     * @param op the pass
     * @param name the solver's name
     * @return this descriptor
     * @throws InvalidArgumentException for an unknown name (the message lists the known ones)
     */
    @CFunction({"conv_algo_from_name", "conv_desc_set_algorithm"})
    public Conv setAlgorithm(Op op, String name) {
        ensureOpen();
        int o = op.value();
        int a = Algorithm.idOf(name);
        return set(d -> ConvNative.conv_desc_set_algorithm(d, o, a));
    }

    /**
     * The name of the solver forced for a pass ({@code "auto"} when none is), also for solvers
     * that have no {@link Algorithm} constant.
     *
     * @param op the pass
     * @return the name
     */
    @CFunction({"conv_desc_get_algorithm", "conv_algo_name"})
    public String getAlgorithmName(Op op) {
        ensureOpen();
        int[] v = new int[1];
        int o = op.value();
        get(d -> ConvNative.conv_desc_get_algorithm(d, o, v));
        return ConvNative.conv_algo_name(v[0]);
    }

    /**
     * The algorithm forced for a pass.
     *
     * @param op the pass
     * @return the algorithm, {@link Algorithm#AUTO} when none is forced
     */
    @CFunction("conv_desc_get_algorithm")
    public Algorithm getAlgorithm(Op op) {
        ensureOpen();
        int[] v = new int[1];
        int o = op.value();
        get(d -> ConvNative.conv_desc_get_algorithm(d, o, v));
        return Algorithm.fromValue(v[0]);
    }

    // ------------------------------------------------------- shape and cost

    private void sameRank(long[] xDims, long[] wDims) {
        ensureOpen();
        if (xDims == null) throw new NullPointerException("xDims is null");
        if (wDims == null) throw new NullPointerException("wDims is null");
        if (xDims.length != wDims.length)
            throw new IllegalArgumentException("xDims has " + xDims.length + " dims, wDims " + wDims.length);
    }

    /**
     * The output dims of the forward pass for input and filter dims (see
     * {@code conv_output_dims} in conv.h for the formula).
     *
     * @param xDims input dims (N, C, spatial...), spatialDims + 2 of them
     * @param wDims filter dims (K, C/groups, kernel...), as many
     * @return output dims (N, K, out...)
     * @throws ShapeMismatchException if the dims do not fit together or an output size is &lt; 1
     */
    @CFunction("conv_output_dims")
    public long[] outputDims(long[] xDims, long[] wDims) {
        ensureOpen();
        sameRank(xDims, wDims);
        long[] y = new long[xDims.length];
        get(d -> ConvNative.conv_output_dims(d, xDims.length, xDims, wDims, y));
        return y;
    }

    /**
     * The output dims of the forward pass for an input and a filter tensor.
     *
     * @param x the input
     * @param w the filter
     * @return output dims (N, K, out...)
     * @throws ShapeMismatchException if the dims do not fit together or an output size is &lt; 1
     */
    @CFunction("conv_output_dims")
    public long[] outputDims(Tensor x, Tensor w) {
        ensureOpen();
        return outputDims(x.dims(), w.dims());
    }

    /**
     * The cost of one pass of a problem given by input and filter dims.
     *
     * @param op the pass
     * @param dtype the element type (for the bytes)
     * @param xDims input dims
     * @param wDims filter dims
     * @return flops and bytes
     * @throws ShapeMismatchException if the dims do not fit together
     */
    @CFunction("conv_cost")
    public Cost cost(Op op, DType dtype, long[] xDims, long[] wDims) {
        ensureOpen();
        sameRank(xDims, wDims);
        double[] flops = new double[1];
        double[] bytes = new double[1];
        int o = op.value();
        int t = dtype.value();
        get(d -> ConvNative.conv_cost(d, o, t, xDims.length, xDims, wDims, flops, bytes));
        return new Cost(flops[0], bytes[0]);
    }

    // ------------------------------------------------------------ the passes

    private interface Pass {
        void run(Pins p, long desc);
    }

    /** Runs a pass: shared with other passes, exclusive with the setters. */
    private void pass(Pass pass) {
        Lock l = lock.readLock();
        l.lock();
        try (Pins p = new Pins()) {
            pass.run(p, p.pin(this));
        } finally {
            l.unlock();
        }
    }

    /**
     * The workspace bytes a pass needs for these tensors with this context. The tensors play
     * the roles of input, filter and output whatever the pass: for
     * {@link Op#BACKWARD_DATA} pass (dx, w, dy), for {@link Op#BACKWARD_FILTER} (x, dw, dy).
     *
     * @param ctx the context
     * @param op the pass
     * @param x the input (or dx)
     * @param w the filter (or dw)
     * @param y the output (or dy)
     * @return bytes
     */
    @CFunction("conv_workspace_size")
    public long workspaceSize(Context ctx, Op op, Tensor x, Tensor w, Tensor y) {
        ensureOpen();
        long[] bytes = new long[1];
        int o = op.value();
        pass((p, d) -> ConvNative.conv_workspace_size(p.pin(ctx, "ctx"), d, o, p.pin(x, "x"),
                p.pin(w, "w"), p.pin(y, "y"), bytes));
        return bytes[0];
    }

    /**
     * y = act(conv(x, w) + b), with a workspace from the context's pool.
     *
     * @param ctx the context
     * @param x input (N, C, in...)
     * @param w filter (K, C/groups, kernel...)
     * @param b bias of K elements (e.g. dims (1, K, 1, 1)), or null
     * @param y output, exactly {@link #outputDims(Tensor, Tensor)}
     * @throws ShapeMismatchException if the dims do not fit
     * @throws TypeMismatchException if dtypes, layouts or devices differ
     * @throws UnsupportedException for FLOAT16/BFLOAT16 on the CPU or a forced algorithm that
     *     does not apply
     */
    @CFunction("conv_forward")
    public void forward(Context ctx, Tensor x, Tensor w, Tensor b, Tensor y) {
        forward(ctx, x, w, b, y, null);
    }

    /**
     * y = act(conv(x, w) + b), with a given workspace.
     *
     * @param ctx the context
     * @param x input (N, C, in...)
     * @param w filter (K, C/groups, kernel...)
     * @param b bias of K elements (e.g. dims (1, K, 1, 1)), or null
     * @param y output, exactly {@link #outputDims(Tensor, Tensor)}
     * @param ws the workspace, or null for one from the context's pool
     * @throws ShapeMismatchException if the dims do not fit
     * @throws TypeMismatchException if dtypes, layouts or devices differ
     * @throws UnsupportedException for FLOAT16/BFLOAT16 on the CPU or a forced algorithm that
     *     does not apply
     * @throws WorkspaceTooSmallException if a wrapped workspace is too small
     */
    @CFunction("conv_forward")
    public void forward(Context ctx, Tensor x, Tensor w, Tensor b, Tensor y, Workspace ws) {
        pass((p, d) -> ConvNative.conv_forward(p.pin(ctx, "ctx"), d, p.pin(x, "x"), p.pin(w, "w"),
                p.pin(b), p.pin(y, "y"), p.pin(ws)));
    }

    /**
     * dx = the gradient with respect to the input (the transposed convolution of dy with w),
     * with a workspace from the context's pool.
     *
     * @param ctx the context
     * @param w filter
     * @param dy gradient with respect to the output (before the activation)
     * @param dx gradient with respect to the input (output; the input's dims)
     * @throws ShapeMismatchException if the dims do not fit
     * @throws TypeMismatchException if dtypes, layouts or devices differ
     */
    @CFunction("conv_backward_data")
    public void backwardData(Context ctx, Tensor w, Tensor dy, Tensor dx) {
        backwardData(ctx, w, dy, dx, null);
    }

    /**
     * dx = the gradient with respect to the input, with a given workspace.
     *
     * @param ctx the context
     * @param w filter
     * @param dy gradient with respect to the output (before the activation)
     * @param dx gradient with respect to the input (output; the input's dims)
     * @param ws the workspace, or null for one from the context's pool
     * @throws ShapeMismatchException if the dims do not fit
     * @throws TypeMismatchException if dtypes, layouts or devices differ
     * @throws WorkspaceTooSmallException if a wrapped workspace is too small
     */
    @CFunction("conv_backward_data")
    public void backwardData(Context ctx, Tensor w, Tensor dy, Tensor dx, Workspace ws) {
        pass((p, d) -> ConvNative.conv_backward_data(p.pin(ctx, "ctx"), d, p.pin(w, "w"), p.pin(dy, "dy"),
                p.pin(dx, "dx"), p.pin(ws)));
    }

    /**
     * dw = the gradient with respect to the filter, summed over the batch, and db = the sums of
     * dy (the bias gradient), with a workspace from the context's pool.
     *
     * @param ctx the context
     * @param x the input
     * @param dy gradient with respect to the output (before the activation)
     * @param dw gradient with respect to the filter (output)
     * @param db bias gradient of K elements (output), or null to skip it
     * @throws ShapeMismatchException if the dims do not fit
     * @throws TypeMismatchException if dtypes, layouts or devices differ
     */
    @CFunction("conv_backward_filter")
    public void backwardFilter(Context ctx, Tensor x, Tensor dy, Tensor dw, Tensor db) {
        backwardFilter(ctx, x, dy, dw, db, null);
    }

    /**
     * dw and db as {@link #backwardFilter(Context, Tensor, Tensor, Tensor, Tensor)}, with a given
     * workspace.
     *
     * @param ctx the context
     * @param x the input
     * @param dy gradient with respect to the output (before the activation)
     * @param dw gradient with respect to the filter (output)
     * @param db bias gradient of K elements (output), or null to skip it
     * @param ws the workspace, or null for one from the context's pool
     * @throws ShapeMismatchException if the dims do not fit
     * @throws TypeMismatchException if dtypes, layouts or devices differ
     * @throws WorkspaceTooSmallException if a wrapped workspace is too small
     */
    @CFunction("conv_backward_filter")
    public void backwardFilter(Context ctx, Tensor x, Tensor dy, Tensor dw, Tensor db, Workspace ws) {
        pass((p, d) -> ConvNative.conv_backward_filter(p.pin(ctx, "ctx"), d, p.pin(x, "x"), p.pin(dy, "dy"),
                p.pin(dw, "dw"), p.pin(db), p.pin(ws)));
    }

    // ---------------------------------------------------- choosing algorithms

    /**
     * The algorithm a pass would run for these tensors: the forced one, else the context's tuned
     * choice, else libconv's heuristic. Tensors in the roles of
     * {@link #workspaceSize(Context, Op, Tensor, Tensor, Tensor)}.
     *
     * @param ctx the context
     * @param op the pass
     * @param x the input (or dx)
     * @param w the filter (or dw)
     * @param y the output (or dy)
     * @return the algorithm, or null for a solver that has no constant in this version of the
     *     Java API (a {@link Plan} of the pass gives its name: {@link Plan#solverName()})
     */
    @CFunction("conv_chosen_algorithm")
    public Algorithm chosenAlgorithm(Context ctx, Op op, Tensor x, Tensor w, Tensor y) {
        return Algorithm.find(chosenId(ctx, op, x, w, y));
    }

    /** The id conv_chosen_algorithm gives for a pass (private solvers' too). */
    private int chosenId(Context ctx, Op op, Tensor x, Tensor w, Tensor y) {
        ensureOpen();
        int[] algo = new int[1];
        int o = op.value();
        pass((p, d) -> ConvNative.conv_chosen_algorithm(p.pin(ctx, "ctx"), d, o, p.pin(x, "x"),
                p.pin(w, "w"), p.pin(y, "y"), algo));
        return algo[0];
    }

    /**
     * The name of the solver a pass would run for these tensors, as the verbose trace and
     * {@link Plan#solverName()} give it. Unlike {@link #chosenAlgorithm}, it has an answer for
     * every solver, also those without an {@link Algorithm} constant (AUTO picks such private
     * solvers, like {@code "direct_avx512"}, on many layers).
     *
     * @param ctx the context
     * @param op the pass
     * @param x the input (or dx)
     * @param w the filter (or dw)
     * @param y the output (or dy)
     * @return the name
     */
    @CFunction({"conv_chosen_algorithm", "conv_algo_name"})
    public String chosenSolverName(Context ctx, Op op, Tensor x, Tensor w, Tensor y) {
        return ConvNative.conv_algo_name(chosenId(ctx, op, x, w, y));
    }

    /**
     * Benchmarks every algorithm that applies to a pass and remembers the fastest in the
     * context for later calls whose descriptor leaves the pass on {@link Algorithm#AUTO}. The
     * pass's output tensor is overwritten by the trial runs; the inputs are unchanged. Tensors
     * in the roles of {@link #workspaceSize(Context, Op, Tensor, Tensor, Tensor)}.
     *
     * @param ctx the context
     * @param op the pass
     * @param x the input (or dx)
     * @param w the filter (or dw)
     * @param y the output (or dy)
     * @param ws the workspace, or null for one from the context's pool; a wrapped one too small
     *     for a candidate skips that candidate
     * @return the results, fastest first
     * @throws UnsupportedException if no candidate could run
     */
    @CFunction("conv_find_algorithms")
    public List<AlgorithmTiming> findAlgorithms(Context ctx, Op op, Tensor x, Tensor w, Tensor y, Workspace ws) {
        ensureOpen();
        int capacity = Algorithm.values().length;
        int[] algos = new int[capacity];
        double[] ms = new double[capacity];
        long[] bytes = new long[capacity];
        int[] count = new int[1];
        int o = op.value();
        pass((p, d) -> ConvNative.conv_find_algorithms(p.pin(ctx, "ctx"), d, o, p.pin(x, "x"), p.pin(w, "w"),
                p.pin(y, "y"), p.pin(ws), capacity, algos, ms, bytes, count));
        List<AlgorithmTiming> results = new ArrayList<>();
        for (int i = 0; i < count[0]; ++i)
            results.add(new AlgorithmTiming(algos[i], ConvNative.conv_algo_name(algos[i]), ms[i], bytes[i]));
        return results;
    }

    // ------------------------------------------------------------------ plans

    /**
     * Makes a {@link Plan} of one pass for tensors of these dims, dtype and layout: the solver
     * is chosen and the workspace sized once, for many executions. No tensor data is read; the
     * descriptor's settings are copied (later changes do not reach the plan).
     *
     * @param ctx the context the plan computes with
     * @param op the pass
     * @param dtype the element type of every tensor
     * @param layout the layout of every tensor
     * @param xDims input dims (N, C, spatial...): dx's for {@link Op#BACKWARD_DATA}
     * @param wDims filter dims: dw's for {@link Op#BACKWARD_FILTER}
     * @param bias whether forward executions pass a bias, or backward-filter ones a bias
     *     gradient (ignored for backward-data)
     * @return the plan; close it when done
     * @throws ShapeMismatchException if the dims do not fit together
     * @throws UnsupportedException if a forced algorithm does not apply, or the dtype is not
     *     computed on the device
     */
    @CFunction("conv_plan_create")
    public Plan plan(Context ctx, Op op, DType dtype, Layout layout, long[] xDims, long[] wDims, boolean bias) {
        sameRank(xDims, wDims);
        boolean withBias = bias && op != Op.BACKWARD_DATA;
        long[] out = new long[1];
        int o = op.value();
        int t = dtype.value();
        int l = layout.value();
        pass((p, d) -> ConvNative.conv_plan_create(p.pin(ctx, "ctx"), d, o, t, l, xDims.length, xDims, wDims,
                withBias ? 1 : 0, out));
        return new Plan(out[0], ctx, op, dtype, layout, withBias);
    }

    @Override
    void destroy(long handle) {
        ConvNative.conv_desc_destroy(handle);
    }

    /** Frees the descriptor. Waits for passes running on other threads; does nothing the second time. */
    @Override
    @CFunction("conv_desc_destroy")
    public void close() {
        closeHandle();
    }

    @Override
    public String toString() {
        if (isClosed()) return "Conv(closed)";
        try {
            return "Conv(" + getMode() + ", strides " + Arrays.toString(getStrides()) + ", dilations "
                    + Arrays.toString(getDilations()) + ", padding " + Arrays.toString(getPaddingBegin()) + "/"
                    + Arrays.toString(getPaddingEnd()) + ", " + getAutoPad() + ", groups " + getGroups() + ", "
                    + getActivation() + ")";
        } catch (IllegalStateException e) {
            return "Conv(closed)";
        }
    }
}
