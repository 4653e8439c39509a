package org.libconv;

/**
 * How the ranks of a {@link Communicator} talk to each other.
 * The values are those of C's {@code conv_comm_backend_t}.
 */
public enum CommBackend {
    /** Ranks that are threads of one process, through shared memory; always built. */
    LOCAL(conv_comm_backend_t.CONV_COMM_BACKEND_LOCAL),
    /** Ranks that are MPI processes, on host memory; built when MPI was found. */
    MPI(conv_comm_backend_t.CONV_COMM_BACKEND_MPI),
    /** One GPU per rank, on device memory; built when NCCL and CUDA were found. */
    NCCL(conv_comm_backend_t.CONV_COMM_BACKEND_NCCL);

    private static final CommBackend[] VALUES = values();
    private final int value;

    CommBackend(int value) {
        this.value = value;
    }

    /**
     * The C value ({@code CONV_COMM_BACKEND_...}).
     *
     * @return the value
     */
    public int value() {
        return value;
    }

    /**
     * The constant with a C value.
     *
     * @param value a C value
     * @return its constant
     * @throws IllegalArgumentException if this version does not know the value
     */
    public static CommBackend fromValue(int value) {
        for (CommBackend v : VALUES)
            if (v.value == value) return v;
        throw new IllegalArgumentException("unknown conv_comm_backend_t value " + value);
    }
}
