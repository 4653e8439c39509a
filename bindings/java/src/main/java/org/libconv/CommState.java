package org.libconv;

/**
 * The health of a {@link Communicator} ({@link Communicator#state()}). Once not OK it stays so:
 * every later collective fails.
 * The values are those of C's {@code conv_comm_state_t}.
 */
public enum CommState {
    /** Healthy. */
    OK(conv_comm_state_t.CONV_COMM_STATE_OK),
    /**
     * {@link Communicator#abort()} was called (for LOCAL: on any rank), or a LOCAL rank was closed
     * while the others needed it.
     */
    ABORTED(conv_comm_state_t.CONV_COMM_STATE_ABORTED),
    /** A collective waited longer than the timeout. */
    TIMED_OUT(conv_comm_state_t.CONV_COMM_STATE_TIMED_OUT),
    /** The backend (MPI, NCCL, CUDA) reported an error. */
    FAILED(conv_comm_state_t.CONV_COMM_STATE_FAILED);

    private static final CommState[] VALUES = values();
    private final int value;

    CommState(int value) {
        this.value = value;
    }

    /**
     * The C value ({@code CONV_COMM_STATE_...}).
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
    public static CommState fromValue(int value) {
        for (CommState v : VALUES)
            if (v.value == value) return v;
        throw new IllegalArgumentException("unknown conv_comm_state_t value " + value);
    }
}
