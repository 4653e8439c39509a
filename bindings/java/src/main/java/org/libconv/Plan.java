package org.libconv;

import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.ReadWriteLock;
import java.util.concurrent.locks.ReentrantReadWriteLock;

/**
 * One pass of one problem, prepared once and executed many times ({@code conv_plan_t}); made by
 * {@link Conv#plan}.
 *
 * <p>The dims, dtype, layout and context are fixed when the plan is made, the solver is chosen
 * (forced by the descriptor, the context's tuned choice, or libconv's heuristic) and its
 * workspace sized; the descriptor is not read again. The pass then runs with the method of the
 * plan's {@link Op}, whose arguments are those of the {@link Conv} method of the same name
 * without the context:
 * <pre>
 * try (Plan plan = conv.plan(ctx, Op.FORWARD, DType.FLOAT32, Layout.CHANNELS_FIRST, xDims, wDims, true)) {
 *     for (...) plan.forward(x, w, b, y);
 * }
 * </pre>
 * The tensors must have the plan's dims, dtype and layout; a bias (or bias gradient) is given
 * exactly when the plan was made with {@code bias}.
 *
 * <p>Threads: a plan may be executed from several threads at once; {@link #prepareWeights} and
 * {@link #releaseWeights} wait for the executions running and hold new ones back meanwhile;
 * {@link #close()} waits for them too. A plan keeps the settings its context had when it was
 * made (threads, math mode, ...). It is not closed with its context: once the context is
 * closed, executing it throws {@link InvalidHandleException}.
 *
 * <p>Prepared weights, for inference: {@link #prepareWeights} lets the plan keep its own
 * transformed copy of the filter (the Winograd-domain filter, for one), which later executions
 * use instead of transforming the filter again. <b>The rule:</b> the copy is made from the
 * filter's contents at that call, and executions use it whatever the filter tensor they are
 * given holds; so after every change of the weights call {@link #prepareWeights} again (or
 * {@link #releaseWeights} to go back to reading the filter).
 */
public final class Plan extends NativeObject implements AutoCloseable {
    private final Context context;
    private final Op op;
    private final DType dtype;
    private final Layout layout;
    private final boolean bias;
    /** Executions share it; preparing or releasing the weights takes it alone. */
    private final ReadWriteLock lock = new ReentrantReadWriteLock();

    Plan(long handle, Context context, Op op, DType dtype, Layout layout, boolean bias) {
        super(handle);
        this.context = context;
        this.op = op;
        this.dtype = dtype;
        this.layout = layout;
        this.bias = bias;
    }

    @Override
    String kind() {
        return "plan";
    }

    /**
     * The context the plan was made with.
     *
     * @return the context
     */
    public Context context() {
        return context;
    }

    /**
     * The pass the plan runs.
     *
     * @return the pass
     */
    public Op op() {
        ensureOpen();
        return op;
    }

    /**
     * The element type of the pass's tensors.
     *
     * @return the dtype
     */
    public DType dtype() {
        ensureOpen();
        return dtype;
    }

    /**
     * The layout of the pass's tensors.
     *
     * @return the layout
     */
    public Layout layout() {
        ensureOpen();
        return layout;
    }

    /**
     * Whether the plan was made for a bias (forward) or a bias gradient (backward-filter).
     *
     * @return true if so
     */
    public boolean hasBias() {
        ensureOpen();
        return bias;
    }

    /**
     * The workspace bytes an execution needs.
     *
     * @return bytes
     */
    @CFunction("conv_plan_get_workspace_size")
    public long workspaceSize() {
        long[] bytes = new long[1];
        try (Pins p = new Pins()) {
            ConvNative.conv_plan_get_workspace_size(p.pin(this), bytes);
        }
        return bytes[0];
    }

    /**
     * The id of the solver the plan runs: an {@link Algorithm} value, or the id of a solver that
     * has no constant (see {@link #solverName()}).
     *
     * @return the {@code conv_algo_t} value
     */
    @CFunction("conv_plan_get_algorithm")
    public int algorithmId() {
        int[] algo = new int[1];
        try (Pins p = new Pins()) {
            ConvNative.conv_plan_get_algorithm(p.pin(this), algo);
        }
        return algo[0];
    }

    /**
     * The solver the plan runs, as an {@link Algorithm}.
     *
     * @return the constant, or null for a solver that has no constant in this version of the
     *     Java API (its name: {@link #solverName()})
     */
    @CFunction("conv_plan_get_algorithm")
    public Algorithm algorithm() {
        return Algorithm.find(algorithmId());
    }

    /**
     * The name of the solver the plan runs, as the verbose trace prints it
     * ({@code "winograd_4x4_3x3"}).
     *
     * @return the name
     */
    @CFunction("conv_plan_get_solver_name")
    public String solverName() {
        String[] name = new String[1];
        try (Pins p = new Pins()) {
            ConvNative.conv_plan_get_solver_name(p.pin(this), name);
        }
        return name[0];
    }

    // ------------------------------------------------------------ executing

    private void requireOp(Op wanted) {
        ensureOpen();
        if (op != wanted) throw new IllegalStateException("this plan runs " + op + ", not " + wanted);
    }

    /** Pins the plan's context, which must still be open, for one native call. */
    private long pinContext(Pins p, String function) {
        try {
            return p.pin(context);
        } catch (IllegalStateException closed) {
            throw new InvalidHandleException(function,
                    "the plan's context is closed; make a new plan with an open context");
        }
    }

    /** conv_plan_execute with tensors in C's roles (x, w, b, y). */
    private void execute(Tensor x, String xName, Tensor w, String wName, Tensor b, Tensor y, String yName,
            Workspace ws) {
        Lock l = lock.readLock();
        l.lock();
        try (Pins p = new Pins()) {
            long plan = p.pin(this);
            pinContext(p, "conv_plan_execute");
            ConvNative.conv_plan_execute(plan, p.pin(x, xName), p.pin(w, wName), p.pin(b), p.pin(y, yName),
                    p.pin(ws));
        } finally {
            l.unlock();
        }
    }

    /**
     * y = act(conv(x, w) + b): runs a {@link Op#FORWARD} plan, with a workspace from the
     * context's pool.
     *
     * @param x input
     * @param w filter (or nothing of it is read, when prepared: see the class documentation)
     * @param b bias of K elements, exactly when the plan was made with a bias; else null
     * @param y output
     * @throws IllegalStateException if the plan runs another pass
     * @throws ShapeMismatchException if a tensor does not have the plan's dims
     * @throws TypeMismatchException if a dtype, layout or device is not the plan's
     * @throws InvalidHandleException if the plan's context is closed
     */
    @CFunction("conv_plan_execute")
    public void forward(Tensor x, Tensor w, Tensor b, Tensor y) {
        forward(x, w, b, y, null);
    }

    /**
     * y = act(conv(x, w) + b): runs a {@link Op#FORWARD} plan, with a given workspace.
     *
     * @param x input
     * @param w filter
     * @param b bias of K elements, exactly when the plan was made with a bias; else null
     * @param y output
     * @param ws the workspace (at least {@link #workspaceSize()}), or null for one from the
     *     context's pool
     * @throws IllegalStateException if the plan runs another pass
     * @throws ShapeMismatchException if a tensor does not have the plan's dims
     * @throws TypeMismatchException if a dtype, layout or device is not the plan's
     * @throws WorkspaceTooSmallException if a wrapped workspace is too small
     * @throws InvalidHandleException if the plan's context is closed
     */
    @CFunction("conv_plan_execute")
    public void forward(Tensor x, Tensor w, Tensor b, Tensor y, Workspace ws) {
        requireOp(Op.FORWARD);
        execute(x, "x", w, "w", b, y, "y", ws);
    }

    /**
     * dx from the filter and dy: runs a {@link Op#BACKWARD_DATA} plan, with a workspace from the
     * context's pool.
     *
     * @param w filter
     * @param dy gradient with respect to the output
     * @param dx gradient with respect to the input (output)
     * @throws IllegalStateException if the plan runs another pass
     * @throws ShapeMismatchException if a tensor does not have the plan's dims
     * @throws TypeMismatchException if a dtype, layout or device is not the plan's
     * @throws InvalidHandleException if the plan's context is closed
     */
    @CFunction("conv_plan_execute")
    public void backwardData(Tensor w, Tensor dy, Tensor dx) {
        backwardData(w, dy, dx, null);
    }

    /**
     * dx from the filter and dy: runs a {@link Op#BACKWARD_DATA} plan, with a given workspace.
     *
     * @param w filter
     * @param dy gradient with respect to the output
     * @param dx gradient with respect to the input (output)
     * @param ws the workspace, or null for one from the context's pool
     * @throws IllegalStateException if the plan runs another pass
     * @throws ShapeMismatchException if a tensor does not have the plan's dims
     * @throws TypeMismatchException if a dtype, layout or device is not the plan's
     * @throws WorkspaceTooSmallException if a wrapped workspace is too small
     * @throws InvalidHandleException if the plan's context is closed
     */
    @CFunction("conv_plan_execute")
    public void backwardData(Tensor w, Tensor dy, Tensor dx, Workspace ws) {
        requireOp(Op.BACKWARD_DATA);
        execute(dx, "dx", w, "w", null, dy, "dy", ws);
    }

    /**
     * dw (and db) from x and dy: runs a {@link Op#BACKWARD_FILTER} plan, with a workspace from
     * the context's pool.
     *
     * @param x the input
     * @param dy gradient with respect to the output
     * @param dw gradient with respect to the filter (output)
     * @param db bias gradient of K elements (output), exactly when the plan was made with a
     *     bias; else null
     * @throws IllegalStateException if the plan runs another pass
     * @throws ShapeMismatchException if a tensor does not have the plan's dims
     * @throws TypeMismatchException if a dtype, layout or device is not the plan's
     * @throws InvalidHandleException if the plan's context is closed
     */
    @CFunction("conv_plan_execute")
    public void backwardFilter(Tensor x, Tensor dy, Tensor dw, Tensor db) {
        backwardFilter(x, dy, dw, db, null);
    }

    /**
     * dw (and db) from x and dy: runs a {@link Op#BACKWARD_FILTER} plan, with a given workspace.
     *
     * @param x the input
     * @param dy gradient with respect to the output
     * @param dw gradient with respect to the filter (output)
     * @param db bias gradient of K elements (output), exactly when the plan was made with a
     *     bias; else null
     * @param ws the workspace, or null for one from the context's pool
     * @throws IllegalStateException if the plan runs another pass
     * @throws ShapeMismatchException if a tensor does not have the plan's dims
     * @throws TypeMismatchException if a dtype, layout or device is not the plan's
     * @throws WorkspaceTooSmallException if a wrapped workspace is too small
     * @throws InvalidHandleException if the plan's context is closed
     */
    @CFunction("conv_plan_execute")
    public void backwardFilter(Tensor x, Tensor dy, Tensor dw, Tensor db, Workspace ws) {
        requireOp(Op.BACKWARD_FILTER);
        execute(x, "x", dw, "dw", db, dy, "dy", ws);
    }

    // ----------------------------------------------------- prepared weights

    /**
     * Makes the plan's prepared copy of the filter (see the rule in the class documentation).
     * Forward and backward-data plans. Waits for the executions running on other threads and
     * holds new ones back until done.
     *
     * @param w the filter, with the plan's filter dims, dtype and layout
     * @return true if the solver keeps a prepared copy (executions use it, not {@code w}'s data,
     *     until the next call of this method or {@link #releaseWeights}); false if it has
     *     nothing to prepare (executions keep reading the filter they are given)
     * @throws InvalidHandleException if the plan's context is closed
     */
    @CFunction("conv_plan_prepare_weights")
    public boolean prepareWeights(Tensor w) {
        int[] prepared = new int[1];
        Lock l = lock.writeLock();
        l.lock();
        try (Pins p = new Pins()) {
            long plan = p.pin(this);
            pinContext(p, "conv_plan_prepare_weights");
            ConvNative.conv_plan_prepare_weights(plan, p.pin(w, "w"), prepared);
        } finally {
            l.unlock();
        }
        return prepared[0] != 0;
    }

    /** Drops the prepared copy of the filter: executions read the filter they are given again. */
    @CFunction("conv_plan_release_weights")
    public void releaseWeights() {
        Lock l = lock.writeLock();
        l.lock();
        try (Pins p = new Pins()) {
            ConvNative.conv_plan_release_weights(p.pin(this));
        } finally {
            l.unlock();
        }
    }

    @Override
    void destroy(long handle) {
        ConvNative.conv_plan_destroy(handle);
    }

    /** Destroys the plan. Waits for executions running on other threads; does nothing the second time. */
    @Override
    @CFunction("conv_plan_destroy")
    public void close() {
        closeHandle();
    }

    @Override
    public String toString() {
        if (isClosed()) return "Plan(closed)";
        try {
            return "Plan(" + op + ", " + dtype + ", " + layout + (bias ? ", bias" : "") + ", solver " + solverName()
                    + ")";
        } catch (IllegalStateException e) {
            return "Plan(closed)";
        }
    }
}
