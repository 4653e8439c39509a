package org.libconv;

import java.nio.Buffer;
import java.nio.ByteBuffer;
import java.nio.DoubleBuffer;
import java.nio.FloatBuffer;
import java.nio.ShortBuffer;

/**
 * Joins the ranks of a data-parallel job and runs collectives between them
 * ({@code conv_comm_t}; see "Gradient communication" in conv.h and docs/comm.md).
 *
 * <p>Backends: {@link CommBackend#LOCAL} (ranks that are threads of this process:
 * {@link #createLocal}), {@link CommBackend#MPI} ({@link #createMpi}, {@link #createMpiWorld})
 * and {@link CommBackend#NCCL} ({@link #uniqueId} + {@link #createNccl}, or
 * {@link #createNcclAll}); {@link #isAvailable} asks what this build and machine have.
 *
 * <p>Every rank calls the same collectives in the same order with the same count, dtype, op
 * and root. A communicator serves one collective at a time (use it from one thread); {@link
 * #abort()}, {@link #state()}, {@link #failure()} and the getters may be called from any thread
 * at any time. Collectives wait at most {@link #timeout()} for the other ranks; after a
 * timeout, an abort or a backend error the communicator is failed for good and every later
 * collective throws {@link BackendErrorException} at once.
 *
 * <p>Memory: host memory (direct buffers, or CPU tensors) for LOCAL and MPI; device memory
 * (tensors of the communicator's GPU) for NCCL. The buffer overloads take the elements between
 * a buffer's position and limit; send and receive buffers must hold the same number.
 */
public final class Communicator extends NativeObject implements AutoCloseable {
    /** {@code CONV_COMM_UNIQUE_ID_BYTES}: the size of an NCCL id ({@link #uniqueId}). */
    public static final int UNIQUE_ID_BYTES = ConvNativeConstants.CONV_COMM_UNIQUE_ID_BYTES;
    /** {@code CONV_COMM_DEFAULT_TIMEOUT}: the timeout of a new communicator, in seconds. */
    public static final double DEFAULT_TIMEOUT = ConvNativeConstants.CONV_COMM_DEFAULT_TIMEOUT;

    private Communicator(long handle) {
        super(handle);
    }

    private static Communicator[] wrap(long[] handles) {
        Communicator[] comms = new Communicator[handles.length];
        for (int i = 0; i < handles.length; ++i) comms[i] = new Communicator(handles[i]);
        return comms;
    }

    @Override
    String kind() {
        return "communicator";
    }

    // --------------------------------------------------------------- creation

    /**
     * Whether a backend is built into this library and usable on this machine.
     *
     * @param backend the backend
     * @return true for LOCAL; for MPI when built in; for NCCL when built in, loadable and a GPU
     *     is present
     */
    @CFunction("conv_comm_backend_available")
    public static boolean isAvailable(CommBackend backend) {
        int[] available = new int[1];
        ConvNative.conv_comm_backend_available(backend.value(), available);
        return available[0] != 0;
    }

    /**
     * Creates the ranks of an in-process group: element r is rank r. Each is meant for its own
     * thread; all of them must take part in every collective. Closing one while the others run
     * collectives makes those fail (state {@link CommState#ABORTED}) rather than wait.
     *
     * @param nranks 1..1024
     * @return the communicators, by rank
     * @throws InvalidArgumentException if nranks is out of range
     */
    @CFunction("conv_comm_create_local")
    public static Communicator[] createLocal(int nranks) {
        long[] handles = new long[Math.max(nranks, 0)];
        ConvNative.conv_comm_create_local(nranks, handles);
        return wrap(handles);
    }

    /**
     * Wraps an MPI communicator of the application (libconv works on its own duplicate). Every
     * rank of it calls this. The application initialises MPI (MPI_THREAD_MULTIPLE for overlap)
     * and closes its libconv communicators before MPI_Finalize.
     *
     * @param mpiComm a direct buffer of at least 8 bytes holding the MPI_Comm handle at its
     *     position, in native byte order (an int for MPICH-based MPIs, a pointer for Open MPI)
     * @return the communicator
     * @throws NotAvailableException in a build without MPI, or when MPI is not initialised
     */
    @CFunction("conv_comm_create_mpi")
    public static Communicator createMpi(ByteBuffer mpiComm) {
        Buffers.checkDirect(mpiComm, "mpiComm", false);
        if (mpiComm.remaining() < 8) throw new IllegalArgumentException("mpiComm has fewer than 8 bytes remaining");
        long[] out = new long[1];
        ConvNative.conv_comm_create_mpi(mpiComm, out);
        return new Communicator(out[0]);
    }

    /**
     * Wraps MPI_COMM_WORLD, as {@link #createMpi}.
     *
     * @return the communicator
     * @throws NotAvailableException in a build without MPI, or when MPI is not initialised
     */
    @CFunction("conv_comm_create_mpi_world")
    public static Communicator createMpiWorld() {
        long[] out = new long[1];
        ConvNative.conv_comm_create_mpi_world(out);
        return new Communicator(out[0]);
    }

    /**
     * Creates the id that joins NCCL ranks; one rank creates it and sends it to the others by
     * any channel.
     *
     * @return {@link #UNIQUE_ID_BYTES} bytes
     * @throws NotAvailableException without NCCL or a GPU
     */
    @CFunction("conv_comm_unique_id")
    public static byte[] uniqueId() {
        byte[] id = new byte[UNIQUE_ID_BYTES];
        ConvNative.conv_comm_unique_id(id);
        return id;
    }

    /**
     * Creates one rank of an NCCL communicator; every rank calls it within the default timeout.
     *
     * @param id the bytes of {@link #uniqueId}
     * @param nranks the number of ranks
     * @param rank this rank, 0..nranks-1
     * @param device this rank's GPU
     * @return the communicator
     * @throws NotAvailableException without NCCL or a GPU
     */
    @CFunction("conv_comm_create_nccl")
    public static Communicator createNccl(byte[] id, int nranks, int rank, int device) {
        if (id == null) throw new NullPointerException("id is null");
        long[] out = new long[1];
        ConvNative.conv_comm_create_nccl(id, nranks, rank, device, out);
        return new Communicator(out[0]);
    }

    /**
     * Creates the ranks of one process driving several GPUs: element i is rank i on GPU
     * devices[i]. Call each rank's collectives from its own thread.
     *
     * @param devices the GPUs, one per rank
     * @return the communicators, by rank
     * @throws NotAvailableException without NCCL or a GPU
     */
    @CFunction("conv_comm_create_nccl_all")
    public static Communicator[] createNcclAll(int... devices) {
        long[] handles = new long[devices.length];
        ConvNative.conv_comm_create_nccl_all(devices.length, devices, handles);
        return wrap(handles);
    }

    // ----------------------------------------------------------------- queries

    /**
     * This rank.
     *
     * @return 0..size()-1
     */
    @CFunction("conv_comm_get_rank")
    public int rank() {
        int[] v = new int[1];
        try (Pins p = new Pins()) {
            ConvNative.conv_comm_get_rank(p.pin(this), v);
        }
        return v[0];
    }

    /**
     * The number of ranks.
     *
     * @return the size
     */
    @CFunction("conv_comm_get_size")
    public int size() {
        int[] v = new int[1];
        try (Pins p = new Pins()) {
            ConvNative.conv_comm_get_size(p.pin(this), v);
        }
        return v[0];
    }

    /**
     * The backend.
     *
     * @return the backend
     */
    @CFunction("conv_comm_get_backend")
    public CommBackend backend() {
        int[] v = new int[1];
        try (Pins p = new Pins()) {
            ConvNative.conv_comm_get_backend(p.pin(this), v);
        }
        return CommBackend.fromValue(v[0]);
    }

    /**
     * Where the communicator's buffers live.
     *
     * @return {@link Device#CPU} for LOCAL and MPI, {@link Device#CUDA} for NCCL
     */
    @CFunction("conv_comm_get_device")
    public Device device() {
        int[] device = new int[1];
        int[] index = new int[1];
        try (Pins p = new Pins()) {
            ConvNative.conv_comm_get_device(p.pin(this), device, index);
        }
        return Device.fromValue(device[0]);
    }

    /**
     * The index of the device the communicator's buffers live on.
     *
     * @return 0 for the CPU, the GPU index for NCCL
     */
    @CFunction("conv_comm_get_device")
    public int deviceIndex() {
        int[] device = new int[1];
        int[] index = new int[1];
        try (Pins p = new Pins()) {
            ConvNative.conv_comm_get_device(p.pin(this), device, index);
        }
        return index[0];
    }

    /**
     * Sets how long a collective may wait for the other ranks before the communicator gives up
     * and fails; from any thread, for calls that start afterwards.
     *
     * @param seconds &gt; 0, or {@link Double#POSITIVE_INFINITY} to wait forever
     * @return this communicator
     * @throws InvalidArgumentException if not positive
     */
    @CFunction("conv_comm_set_timeout")
    public Communicator setTimeout(double seconds) {
        try (Pins p = new Pins()) {
            ConvNative.conv_comm_set_timeout(p.pin(this), seconds);
        }
        return this;
    }

    /**
     * The timeout.
     *
     * @return seconds
     */
    @CFunction("conv_comm_get_timeout")
    public double timeout() {
        double[] v = new double[1];
        try (Pins p = new Pins()) {
            ConvNative.conv_comm_get_timeout(p.pin(this), v);
        }
        return v[0];
    }

    /**
     * NCCL: the CUDA stream collectives are enqueued on, by address (a {@code cudaStream_t} from
     * native code; 0 for the communicator's own). The caller keeps it alive.
     *
     * @param cudaStream the stream's address, or 0
     * @return this communicator
     * @throws UnsupportedException for LOCAL and MPI
     */
    @CFunction("conv_comm_set_stream")
    public Communicator setStream(long cudaStream) {
        try (Pins p = new Pins()) {
            ConvNative.conv_comm_set_stream(p.pin(this), cudaStream);
        }
        return this;
    }

    // ------------------------------------------------------------- collectives

    /** Checks a host buffer for a collective; returns its element count in `dtype`. */
    private long hostElements(Buffer buffer, DType dtype, String name) {
        ensureOpen();
        Buffers.checkDirect(buffer, name, false);
        Buffers.checkDType(buffer, dtype, name);
        long bytes = (long) buffer.remaining() * Buffers.elementSize(buffer);
        if (bytes % dtype.byteSize() != 0)
            throw new IllegalArgumentException(name + " has " + bytes + " bytes, not a whole number of " + dtype);
        return bytes / dtype.byteSize();
    }

    private void checkHostMemory() {
        Device device = device();
        if (device != Device.CPU)
            throw new IllegalArgumentException("a communicator on " + device + " needs device memory: pass Tensors");
    }

    private void allReduceBuffers(Buffer send, Buffer recv, DType dtype, ReduceOp op) {
        long count = hostElements(send, dtype, "send");
        if (recv != send) {
            if (recv == null) throw new NullPointerException("recv is null");
            Buffers.checkWritable(recv, "recv");
            long recvCount = hostElements(recv, dtype, "recv");
            if (recvCount != count)
                throw new IllegalArgumentException("send has " + count + " elements, recv " + recvCount);
        } else {
            Buffers.checkWritable(send, "buffer");
        }
        int d = dtype.value();
        int o = op.value();
        try (Pins p = new Pins()) {
            long h = p.pin(this);
            checkHostMemory();
            ConvNative.conv_comm_all_reduce(h, send, recv, count, d, o);
        }
    }

    /**
     * recv = op over the ranks of send (floats between position and limit).
     *
     * @param send this rank's values
     * @param recv the result, as many elements (may be send itself)
     * @param op SUM or AVERAGE
     * @throws IllegalArgumentException for heap buffers, a foreign byte order, different sizes or
     *     an NCCL communicator
     * @throws BackendErrorException after a timeout, an abort or a backend failure
     */
    @CFunction("conv_comm_all_reduce")
    public void allReduce(FloatBuffer send, FloatBuffer recv, ReduceOp op) {
        allReduceBuffers(send, recv, DType.FLOAT32, op);
    }

    /**
     * recv = op over the ranks of send (doubles between position and limit).
     *
     * @param send this rank's values
     * @param recv the result, as many elements (may be send itself)
     * @param op SUM or AVERAGE
     * @throws IllegalArgumentException for heap buffers, a foreign byte order, different sizes or
     *     an NCCL communicator
     * @throws BackendErrorException after a timeout, an abort or a backend failure
     */
    @CFunction("conv_comm_all_reduce")
    public void allReduce(DoubleBuffer send, DoubleBuffer recv, ReduceOp op) {
        allReduceBuffers(send, recv, DType.FLOAT64, op);
    }

    /**
     * recv = op over the ranks of send, elements of any dtype (FLOAT16 and BFLOAT16 are summed in
     * float and rounded once).
     *
     * @param send this rank's values, in native byte order
     * @param recv the result, as many bytes (may be send itself)
     * @param dtype the element type
     * @param op SUM or AVERAGE
     * @throws IllegalArgumentException for heap buffers, a foreign byte order, different sizes or
     *     an NCCL communicator
     * @throws BackendErrorException after a timeout, an abort or a backend failure
     */
    @CFunction("conv_comm_all_reduce")
    public void allReduce(ByteBuffer send, ByteBuffer recv, DType dtype, ReduceOp op) {
        allReduceBuffers(send, recv, dtype, op);
    }

    /**
     * recv = op over the ranks of send, in place: the buffer receives the result.
     *
     * @param buffer this rank's values, then the result
     * @param op SUM or AVERAGE
     * @throws BackendErrorException after a timeout, an abort or a backend failure
     */
    @CFunction("conv_comm_all_reduce")
    public void allReduce(FloatBuffer buffer, ReduceOp op) {
        allReduceBuffers(buffer, buffer, DType.FLOAT32, op);
    }

    /**
     * recv = op over the ranks of send, in place: the buffer receives the result.
     *
     * @param buffer this rank's values, then the result
     * @param op SUM or AVERAGE
     * @throws BackendErrorException after a timeout, an abort or a backend failure
     */
    @CFunction("conv_comm_all_reduce")
    public void allReduce(DoubleBuffer buffer, ReduceOp op) {
        allReduceBuffers(buffer, buffer, DType.FLOAT64, op);
    }

    /** The data address and element count of a tensor pinned in p, checked against the communicator. */
    private static long[] tensorMemory(Pins p, Tensor t, String name, Device device, int index) {
        long h = p.pin(t, name);
        Context ctx = t.context();
        if (ctx.device() != device || ctx.deviceIndex() != index)
            throw new IllegalArgumentException(name + " is on " + ctx.device() + ":" + ctx.deviceIndex()
                    + " but the communicator's memory is on " + device + ":" + index);
        long[] address = new long[1];
        long[] elements = new long[1];
        ConvNative.conv_tensor_get_data(h, address);
        ConvNative.conv_tensor_get_elements(h, elements);
        return new long[] {address[0], elements[0]};
    }

    /**
     * recv = op over the ranks of send, on the tensors' memory (host memory for LOCAL and MPI,
     * device memory of the communicator's GPU for NCCL). The layouts do not matter: the
     * elements are reduced in storage order.
     *
     * @param send this rank's values
     * @param recv the result, as many elements of the same dtype (may be send itself)
     * @param op SUM or AVERAGE
     * @throws IllegalArgumentException if the sizes, dtypes or devices do not fit
     * @throws BackendErrorException after a timeout, an abort or a backend failure
     */
    @CFunction({"conv_comm_all_reduce", "conv_tensor_get_data"})
    public void allReduce(Tensor send, Tensor recv, ReduceOp op) {
        ensureOpen();
        int o = op.value();
        try (Pins p = new Pins()) {
            long h = p.pin(this);
            Device device = device();
            int index = deviceIndex();
            long[] s = tensorMemory(p, send, "send", device, index);
            long[] r = tensorMemory(p, recv, "recv", device, index);
            DType dtype = send.dtype();
            if (recv.dtype() != dtype || r[1] != s[1])
                throw new IllegalArgumentException("send is " + dtype + " x " + s[1] + ", recv " + recv.dtype()
                        + " x " + r[1]);
            ConvNative.conv_comm_all_reduce(h, s[0], r[0], s[1], dtype.value(), o);
        }
    }

    private void broadcastBuffer(Buffer buffer, DType dtype, int root) {
        long count = hostElements(buffer, dtype, "buffer");
        Buffers.checkWritable(buffer, "buffer");
        try (Pins p = new Pins()) {
            long h = p.pin(this);
            checkHostMemory();
            ConvNative.conv_comm_broadcast(h, buffer, count, dtype.value(), root);
        }
    }

    /**
     * Copies rank root's floats (between position and limit) into every other rank's buffer.
     *
     * @param buffer the values (root) or where they go (the others)
     * @param root the rank that sends
     * @throws BackendErrorException after a timeout, an abort or a backend failure
     */
    @CFunction("conv_comm_broadcast")
    public void broadcast(FloatBuffer buffer, int root) {
        broadcastBuffer(buffer, DType.FLOAT32, root);
    }

    /**
     * Copies rank root's doubles into every other rank's buffer.
     *
     * @param buffer the values (root) or where they go (the others)
     * @param root the rank that sends
     * @throws BackendErrorException after a timeout, an abort or a backend failure
     */
    @CFunction("conv_comm_broadcast")
    public void broadcast(DoubleBuffer buffer, int root) {
        broadcastBuffer(buffer, DType.FLOAT64, root);
    }

    /**
     * Copies rank root's 16-bit elements into every other rank's buffer, bit for bit.
     *
     * @param buffer the values (root) or where they go (the others)
     * @param dtype FLOAT16 or BFLOAT16
     * @param root the rank that sends
     * @throws BackendErrorException after a timeout, an abort or a backend failure
     */
    @CFunction("conv_comm_broadcast")
    public void broadcast(ShortBuffer buffer, DType dtype, int root) {
        broadcastBuffer(buffer, dtype, root);
    }

    /**
     * Copies rank root's bytes (a whole number of dtype elements) into every other rank's
     * buffer, bit for bit.
     *
     * @param buffer the values (root) or where they go (the others)
     * @param dtype the element type
     * @param root the rank that sends
     * @throws BackendErrorException after a timeout, an abort or a backend failure
     */
    @CFunction("conv_comm_broadcast")
    public void broadcast(ByteBuffer buffer, DType dtype, int root) {
        broadcastBuffer(buffer, dtype, root);
    }

    /**
     * Copies rank root's tensor into every other rank's tensor (of the same size and dtype).
     *
     * @param tensor the values (root) or where they go (the others)
     * @param root the rank that sends
     * @throws IllegalArgumentException if the tensor's device does not fit
     * @throws BackendErrorException after a timeout, an abort or a backend failure
     */
    @CFunction({"conv_comm_broadcast", "conv_tensor_get_data"})
    public void broadcast(Tensor tensor, int root) {
        try (Pins p = new Pins()) {
            long h = p.pin(this);
            long[] t = tensorMemory(p, tensor, "tensor", device(), deviceIndex());
            ConvNative.conv_comm_broadcast(h, t[0], t[1], tensor.dtype().value(), root);
        }
    }

    /**
     * Returns when every rank has entered it (NCCL: and every rank's enqueued collectives are
     * complete).
     *
     * @throws BackendErrorException after a timeout, an abort or a backend failure
     */
    @CFunction("conv_comm_barrier")
    public void barrier() {
        try (Pins p = new Pins()) {
            ConvNative.conv_comm_barrier(p.pin(this));
        }
    }

    /**
     * Waits until the collectives this rank enqueued are complete (NCCL); returns at once for
     * LOCAL and MPI.
     *
     * @throws BackendErrorException if the communicator has failed
     */
    @CFunction("conv_comm_synchronize")
    public void synchronize() {
        try (Pins p = new Pins()) {
            ConvNative.conv_comm_synchronize(p.pin(this));
        }
    }

    // ----------------------------------------------------------------- failure

    /**
     * Aborts the communicator, from any thread, also while another thread is inside one of its
     * collectives: that call and every later one throw {@link BackendErrorException}. For LOCAL
     * every rank of the group is aborted. The communicator must still be closed.
     */
    @CFunction("conv_comm_abort")
    public void abort() {
        try (Pins p = new Pins()) {
            ConvNative.conv_comm_abort(p.pin(this));
        }
    }

    /**
     * The communicator's health, from any thread, without waiting.
     *
     * @return {@link CommState#OK} while healthy, else why it failed
     */
    @CFunction("conv_comm_get_error")
    public CommState state() {
        int[] state = new int[1];
        try (Pins p = new Pins()) {
            ConvNative.conv_comm_get_error(p.pin(this), state);
        } catch (ConvException failed) {
            // the state says why
        }
        return CommState.fromValue(state[0]);
    }

    /**
     * The failure of a failed communicator, from any thread, without waiting.
     *
     * @return null while healthy, else the exception its collectives throw, whose message says
     *     why ("all_reduce timed out after 2.0 s on rank 1 of 4: ranks 3 never joined")
     */
    @CFunction("conv_comm_get_error")
    public ConvException failure() {
        int[] state = new int[1];
        try (Pins p = new Pins()) {
            ConvNative.conv_comm_get_error(p.pin(this), state);
            return null;
        } catch (ConvException failed) {
            return failed;
        }
    }

    @Override
    void destroy(long handle) {
        ConvNative.conv_comm_destroy(handle);
    }

    /**
     * Destroys the communicator; waits for calls running on other threads (abort it first to
     * end a collective that waits for ranks that will not come). A {@link Reducer} created on it
     * keeps what it needs alive. Does nothing the second time.
     */
    @Override
    @CFunction("conv_comm_destroy")
    public void close() {
        closeHandle();
    }
}
