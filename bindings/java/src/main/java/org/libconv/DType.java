package org.libconv;

/**
 * The element type of a {@link Tensor}.
 * The values are those of C's {@code conv_dtype_t}.
 */
public enum DType {
    /** 32-bit IEEE float ({@code float}). */
    FLOAT32(conv_dtype_t.CONV_DTYPE_FLOAT32),
    /** 64-bit IEEE float ({@code double}). */
    FLOAT64(conv_dtype_t.CONV_DTYPE_FLOAT64),
    /** 16-bit IEEE half float; storage only on the CPU (computing refuses it). */
    FLOAT16(conv_dtype_t.CONV_DTYPE_FLOAT16),
    /** 16-bit brain float; storage only on the CPU (computing refuses it). */
    BFLOAT16(conv_dtype_t.CONV_DTYPE_BFLOAT16);

    private static final DType[] VALUES = values();
    private final int value;

    DType(int value) {
        this.value = value;
    }

    /**
     * The C value ({@code CONV_DTYPE_...}).
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
    public static DType fromValue(int value) {
        for (DType v : VALUES)
            if (v.value == value) return v;
        throw new IllegalArgumentException("unknown conv_dtype_t value " + value);
    }

    /**
     * The size of one element in bytes.
     *
     * @return 4, 8 or 2
     */
    public int byteSize() {
        switch (this) {
            case FLOAT64:
                return 8;
            case FLOAT16:
            case BFLOAT16:
                return 2;
            default:
                return 4;
        }
    }
}
