package org.libconv;

/**
 * The three passes of a convolution layer.
 * The values are those of C's {@code conv_op_t}.
 */
public enum Op {
    /** {@link Conv#forward}. */
    FORWARD(conv_op_t.CONV_OP_FORWARD),
    /** {@link Conv#backwardData}. */
    BACKWARD_DATA(conv_op_t.CONV_OP_BACKWARD_DATA),
    /** {@link Conv#backwardFilter}. */
    BACKWARD_FILTER(conv_op_t.CONV_OP_BACKWARD_FILTER);

    private static final Op[] VALUES = values();
    private final int value;

    Op(int value) {
        this.value = value;
    }

    /**
     * The C value ({@code CONV_OP_...}).
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
    public static Op fromValue(int value) {
        for (Op v : VALUES)
            if (v.value == value) return v;
        throw new IllegalArgumentException("unknown conv_op_t value " + value);
    }
}
