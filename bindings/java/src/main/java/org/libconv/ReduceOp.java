package org.libconv;

/**
 * How {@link Communicator#allReduce} combines the ranks' values.
 * The values are those of C's {@code conv_reduce_op_t}.
 */
public enum ReduceOp {
    /** The sum over the ranks. */
    SUM(conv_reduce_op_t.CONV_REDUCE_SUM),
    /** The sum divided by the number of ranks (once). */
    AVERAGE(conv_reduce_op_t.CONV_REDUCE_AVERAGE);

    private static final ReduceOp[] VALUES = values();
    private final int value;

    ReduceOp(int value) {
        this.value = value;
    }

    /**
     * The C value ({@code CONV_REDUCE_...}).
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
    public static ReduceOp fromValue(int value) {
        for (ReduceOp v : VALUES)
            if (v.value == value) return v;
        throw new IllegalArgumentException("unknown conv_reduce_op_t value " + value);
    }
}
