package org.libconv;

/**
 * How much accuracy a {@link Context}'s algorithm choice may trade for speed
 * ({@code conv_math_t}; named MathMode so as not to hide {@link java.lang.Math}).
 * The values are those of C's {@code conv_math_t}.
 */
public enum MathMode {
    /**
     * Any algorithm with a documented error bound, such as Winograd on the CPU (about 10x the
     * error of direct summation); on a GPU fp32 math stays fp32.
     */
    DEFAULT(conv_math_t.CONV_MATH_DEFAULT),
    /** Only algorithms that sum products directly: the error of a dot product in the dtype. */
    STRICT(conv_math_t.CONV_MATH_STRICT),
    /** Also reduced-precision internal math where a device has it (TF32 on a GPU). */
    FAST(conv_math_t.CONV_MATH_FAST);

    private static final MathMode[] VALUES = values();
    private final int value;

    MathMode(int value) {
        this.value = value;
    }

    /**
     * The C value ({@code CONV_MATH_...}).
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
    public static MathMode fromValue(int value) {
        for (MathMode v : VALUES)
            if (v.value == value) return v;
        throw new IllegalArgumentException("unknown conv_math_t value " + value);
    }
}
