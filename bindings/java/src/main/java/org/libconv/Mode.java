package org.libconv;

/**
 * What a {@link Conv} computes.
 * The values are those of C's {@code conv_mode_t}.
 */
public enum Mode {
    /** A convolution: x (N, C, in...), filter (K, C/groups, kernel...). */
    CONVOLUTION(conv_mode_t.CONV_MODE_CONVOLUTION),
    /**
     * A transposed convolution (ONNX ConvTranspose): x (N, Cin, in...), filter (Cin, Cout/groups,
     * kernel...), output (N, Cout, (in - 1) * stride - pad_begin - pad_end + dilated_kernel +
     * output_padding...).
     */
    TRANSPOSED(conv_mode_t.CONV_MODE_TRANSPOSED);

    private static final Mode[] VALUES = values();
    private final int value;

    Mode(int value) {
        this.value = value;
    }

    /**
     * The C value ({@code CONV_MODE_...}).
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
    public static Mode fromValue(int value) {
        for (Mode v : VALUES)
            if (v.value == value) return v;
        throw new IllegalArgumentException("unknown conv_mode_t value " + value);
    }
}
