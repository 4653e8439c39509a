package org.libconv;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A device to compute on, with its threads, its pool of workspaces and its cache of algorithm
 * choices ({@code conv_context_t}).
 *
 * <p>A context may be used from several threads at once. Closing it also closes the
 * {@link Tensor}s and {@link Workspace}s created with it that are still open (after which they
 * throw {@link IllegalStateException}); it waits for calls running on other threads first.
 *
 * <pre>
 * try (Context ctx = Context.cpu()) {
 *     ...
 * }
 * </pre>
 */
public final class Context extends NativeObject implements AutoCloseable {
    private final Set<NativeObject> children = ConcurrentHashMap.newKeySet();

    /**
     * Creates a context for a device.
     *
     * @param device {@link Device#CPU} (index 0) or {@link Device#CUDA} (a GPU index)
     * @param index the device index
     * @throws NotAvailableException if the device does not exist in this build or machine (an
     *     index past the devices there are, e.g. CPU index 1)
     * @throws InvalidArgumentException for a negative index
     */
    @CFunction("conv_context_create")
    public Context(Device device, int index) {
        super(create(device, index));
    }

    private static long create(Device device, int index) {
        long[] out = new long[1];
        ConvNative.conv_context_create(device.value(), index, out);
        return out[0];
    }

    /**
     * A context for the CPU, with as many threads as the process may run on (at most 64).
     *
     * @return a new context
     */
    public static Context cpu() {
        return new Context(Device.CPU, 0);
    }

    @Override
    String kind() {
        return "context";
    }

    /**
     * The kind of device the context computes on.
     *
     * @return the device
     */
    @CFunction("conv_context_get_device")
    public Device device() {
        int[] device = new int[1];
        int[] index = new int[1];
        try (Pins p = new Pins()) {
            ConvNative.conv_context_get_device(p.pin(this), device, index);
        }
        return Device.fromValue(device[0]);
    }

    /**
     * The index of the device the context computes on.
     *
     * @return the index (0 for the CPU)
     */
    @CFunction("conv_context_get_device")
    public int deviceIndex() {
        int[] device = new int[1];
        int[] index = new int[1];
        try (Pins p = new Pins()) {
            ConvNative.conv_context_get_device(p.pin(this), device, index);
        }
        return index[0];
    }

    /**
     * Sets the number of threads a CPU context computes with, for calls that start afterwards.
     *
     * @param threads 1..1024
     * @return this context
     * @throws InvalidArgumentException if out of range
     */
    @CFunction("conv_context_set_threads")
    public Context setThreads(int threads) {
        try (Pins p = new Pins()) {
            ConvNative.conv_context_set_threads(p.pin(this), threads);
        }
        return this;
    }

    /**
     * The number of threads the context computes with.
     *
     * @return the thread count
     */
    @CFunction("conv_context_get_threads")
    public int threads() {
        int[] threads = new int[1];
        try (Pins p = new Pins()) {
            ConvNative.conv_context_get_threads(p.pin(this), threads);
        }
        return threads[0];
    }

    /**
     * Turns the numerical guard on or off (off by default, or on for contexts created while the
     * environment variable {@code CONV_CHECK_NUMERICS} is set): when on, every pass reads its
     * outputs after computing them and the first NaN or infinity throws
     * {@link NumericalErrorException} (the outputs have been written). Costs one read of each
     * output.
     *
     * @param on whether to check
     * @return this context
     */
    @CFunction("conv_context_set_check_numerics")
    public Context setCheckNumerics(boolean on) {
        try (Pins p = new Pins()) {
            ConvNative.conv_context_set_check_numerics(p.pin(this), on ? 1 : 0);
        }
        return this;
    }

    /**
     * Whether the numerical guard is on.
     *
     * @return true when on
     */
    @CFunction("conv_context_get_check_numerics")
    public boolean checkNumerics() {
        int[] on = new int[1];
        try (Pins p = new Pins()) {
            ConvNative.conv_context_get_check_numerics(p.pin(this), on);
        }
        return on[0] != 0;
    }

    /**
     * Sets the level of the trace (like oneDNN's {@code ONEDNN_VERBOSE}), written by the native
     * library to the process's standard error (file descriptor 2, not {@code System.err}): 0
     * prints nothing; 1 one line per executed pass, naming the solver that ran
     * ({@code conv_verbose,exec,cpu,fwd,...,solver=winograd_4x4_3x3,plan=hit,0.412}); 2 also,
     * when a plan is made, each solver passed over and why ({@code conv_verbose,skip,...}). A
     * new context starts at the level of the environment variable {@code CONV_VERBOSE}.
     *
     * @param level 0, 1 or 2
     * @return this context
     * @throws InvalidArgumentException if out of range
     */
    @CFunction("conv_context_set_verbose")
    public Context setVerbose(int level) {
        try (Pins p = new Pins()) {
            ConvNative.conv_context_set_verbose(p.pin(this), level);
        }
        return this;
    }

    /**
     * The level of the trace.
     *
     * @return 0 (silent), 1 or 2
     */
    @CFunction("conv_context_get_verbose")
    public int verbose() {
        int[] level = new int[1];
        try (Pins p = new Pins()) {
            ConvNative.conv_context_get_verbose(p.pin(this), level);
        }
        return level[0];
    }

    /**
     * Sets the host allocator of a CPU context to a pair of NATIVE functions, given by address
     * (from native code of the application: JNI, JNA or the foreign function API):
     * {@code void *alloc(void *user, size_t bytes, size_t alignment)} and
     * {@code void free_fn(void *user, void *memory)}, both called with {@code user}, from any
     * thread, and never calling libconv. It serves the elements of tensors made by
     * {@link Tensor#create}, library-owned workspaces and the context's workspace pool from then
     * on. The functions and {@code user} must stay valid until every tensor and workspace
     * allocated through them is closed and the context is closed or given another allocator.
     * Java code cannot be passed here. See {@code conv_context_set_allocator} in conv.h.
     *
     * @param alloc address of the allocation function, or 0 (with free 0) for the default
     * @param free address of the release function, or 0 (with alloc 0) for the default
     * @param user the pointer passed to both, as an address (may be 0)
     * @return this context
     * @throws InvalidArgumentException if only one of the functions is 0
     */
    @CFunction("conv_context_set_allocator")
    public Context setAllocator(long alloc, long free, long user) {
        try (Pins p = new Pins()) {
            ConvNative.conv_context_set_allocator(p.pin(this), alloc, free, user);
        }
        return this;
    }

    /**
     * Restores the default host allocator (aligned malloc and free).
     *
     * @return this context
     */
    @CFunction("conv_context_set_allocator")
    public Context resetAllocator() {
        return setAllocator(0, 0, 0);
    }

    /**
     * Sets the CUDA stream a GPU context enqueues its work on, by address (a
     * {@code cudaStream_t} from native code), so that libconv interleaves with the caller's own
     * work; 0 goes back to the context's own stream. The caller keeps the stream alive.
     *
     * @param cudaStream the stream's address, or 0
     * @return this context
     * @throws UnsupportedException on a CPU context
     */
    @CFunction("conv_context_set_stream")
    public Context setStream(long cudaStream) {
        try (Pins p = new Pins()) {
            ConvNative.conv_context_set_stream(p.pin(this), cudaStream);
        }
        return this;
    }

    /**
     * The CUDA stream calls are enqueued on now.
     *
     * @return its address; 0 for a CPU context
     */
    @CFunction("conv_context_get_stream")
    public long stream() {
        long[] stream = new long[1];
        try (Pins p = new Pins()) {
            ConvNative.conv_context_get_stream(p.pin(this), stream);
        }
        return stream[0];
    }

    /**
     * Waits until every call enqueued on a GPU context's stream has finished (the passes of a
     * GPU context return before the GPU is done; copies to and from host memory wait by
     * themselves). Does nothing on a CPU context.
     *
     * @throws BackendErrorException with the first asynchronous error the GPU reported
     */
    @CFunction("conv_context_synchronize")
    public void synchronize() {
        try (Pins p = new Pins()) {
            ConvNative.conv_context_synchronize(p.pin(this));
        }
    }

    /**
     * Deterministic mode (off by default): libconv only chooses algorithms that give
     * bit-identical results from run to run (forced ones are used as forced). The CPU engine
     * is always deterministic at a given thread count.
     *
     * @param on whether to restrict the choice
     * @return this context
     */
    @CFunction("conv_context_set_deterministic")
    public Context setDeterministic(boolean on) {
        try (Pins p = new Pins()) {
            ConvNative.conv_context_set_deterministic(p.pin(this), on ? 1 : 0);
        }
        return this;
    }

    /**
     * Whether deterministic mode is on.
     *
     * @return true when on
     */
    @CFunction("conv_context_get_deterministic")
    public boolean isDeterministic() {
        int[] on = new int[1];
        try (Pins p = new Pins()) {
            ConvNative.conv_context_get_deterministic(p.pin(this), on);
        }
        return on[0] != 0;
    }

    /**
     * An upper bound on the workspace of the algorithms libconv chooses (GPU; recorded and
     * ignored on the CPU, whose needs are small); 0, the default, means none.
     *
     * @param bytes the bound, or 0
     * @return this context
     */
    @CFunction("conv_context_set_workspace_limit")
    public Context setWorkspaceLimit(long bytes) {
        try (Pins p = new Pins()) {
            ConvNative.conv_context_set_workspace_limit(p.pin(this), bytes);
        }
        return this;
    }

    /**
     * The workspace bound.
     *
     * @return bytes, 0 for none
     */
    @CFunction("conv_context_get_workspace_limit")
    public long workspaceLimit() {
        long[] bytes = new long[1];
        try (Pins p = new Pins()) {
            ConvNative.conv_context_get_workspace_limit(p.pin(this), bytes);
        }
        return bytes[0];
    }

    /**
     * What the context runs on, as written in tuning files: "cpu "cpu &lt;model name&gt;" orlt;model name"cpu &lt;model name&gt;" orgt; ("cpu &lt;model name&gt;" orlt;isa"cpu &lt;model name&gt;" orgt;)" or
     * "cuda &lt;GPU name&gt; sm_&lt;cc&gt; cudnn &lt;version&gt; cudart &lt;version&gt;".
     *
     * @return the name
     */
    @CFunction("conv_context_get_device_name")
    public String deviceName() {
        byte[] name = new byte[1024];
        try (Pins p = new Pins()) {
            ConvNative.conv_context_get_device_name(p.pin(this), name);
        }
        int n = 0;
        while (n < name.length && name[n] != 0) ++n;
        return new String(name, 0, n, java.nio.charset.StandardCharsets.UTF_8);
    }

    /**
     * Sets how much accuracy the algorithm choice may trade for speed (a forced algorithm is
     * used whatever the mode).
     *
     * @param math the mode
     * @return this context
     */
    @CFunction("conv_context_set_math")
    public Context setMath(MathMode math) {
        try (Pins p = new Pins()) {
            ConvNative.conv_context_set_math(p.pin(this), math.value());
        }
        return this;
    }

    /**
     * The math mode.
     *
     * @return the mode
     */
    @CFunction("conv_context_get_math")
    public MathMode math() {
        int[] math = new int[1];
        try (Pins p = new Pins()) {
            ConvNative.conv_context_get_math(p.pin(this), math);
        }
        return MathMode.fromValue(math[0]);
    }

    /**
     * Writes the context's tuned algorithm choices (from {@link Conv#findAlgorithms}) to a file,
     * atomically (a temporary file renamed).
     *
     * @param path the file
     * @throws IoErrorException if the file cannot be written
     */
    @CFunction("conv_context_save_tuning")
    public void saveTuning(Path path) {
        try (Pins p = new Pins()) {
            ConvNative.conv_context_save_tuning(p.pin(this), path.toString());
        }
    }

    /**
     * Adds choices saved by {@link #saveTuning} to the context's (an entry for a problem already
     * tuned replaces it).
     *
     * @param path the file
     * @throws IoErrorException if the file cannot be read
     * @throws BadFileException if it is truncated, corrupt, or from another version or device
     *     (nothing is applied)
     */
    @CFunction("conv_context_load_tuning")
    public void loadTuning(Path path) {
        try (Pins p = new Pins()) {
            ConvNative.conv_context_load_tuning(p.pin(this), path.toString());
        }
    }

    /** Forgets every tuned choice of the context. */
    @CFunction("conv_context_clear_tuning")
    public void clearTuning() {
        try (Pins p = new Pins()) {
            ConvNative.conv_context_clear_tuning(p.pin(this));
        }
    }

    /** Registers a tensor or workspace created with this context (the caller has it pinned). */
    void adopt(NativeObject child) {
        children.add(child);
    }

    /** Unregisters a closed child. */
    void forget(NativeObject child) {
        children.remove(child);
    }

    /** The number of open tensors and workspaces created with this context (for tests). */
    int openChildren() {
        return children.size();
    }

    @Override
    void beforeDestroy() {
        List<NativeObject> open = new ArrayList<>(children);
        for (NativeObject child : open) {
            if (child instanceof AutoCloseable) {
                try {
                    ((AutoCloseable) child).close();
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            }
        }
        children.clear();
    }

    @Override
    void destroy(long handle) {
        ConvNative.conv_context_destroy(handle);
    }

    /**
     * Closes the tensors and workspaces created with this context that are still open, then
     * destroys the context. Waits for calls running on other threads; does nothing the second
     * time.
     */
    @Override
    @CFunction("conv_context_destroy")
    public void close() {
        closeHandle();
    }
}
