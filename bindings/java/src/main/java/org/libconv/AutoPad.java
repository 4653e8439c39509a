package org.libconv;

/**
 * How a {@link Conv} derives its padding (ONNX auto_pad). See {@code conv_auto_pad_t} in conv.h
 * for the formulas.
 * The values are those of C's {@code conv_auto_pad_t}.
 */
public enum AutoPad {
    /** The explicit padding of {@link Conv#setPadding(long[], long[])}. */
    NOTSET(conv_auto_pad_t.CONV_AUTO_PAD_NOTSET),
    /** No padding. */
    VALID(conv_auto_pad_t.CONV_AUTO_PAD_VALID),
    /** Output size ceil(in / stride), the odd padding element at the end. */
    SAME_UPPER(conv_auto_pad_t.CONV_AUTO_PAD_SAME_UPPER),
    /** Output size ceil(in / stride), the odd padding element at the beginning. */
    SAME_LOWER(conv_auto_pad_t.CONV_AUTO_PAD_SAME_LOWER);

    private static final AutoPad[] VALUES = values();
    private final int value;

    AutoPad(int value) {
        this.value = value;
    }

    /**
     * The C value ({@code CONV_AUTO_PAD_...}).
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
    public static AutoPad fromValue(int value) {
        for (AutoPad v : VALUES)
            if (v.value == value) return v;
        throw new IllegalArgumentException("unknown conv_auto_pad_t value " + value);
    }
}
