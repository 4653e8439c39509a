package org.libconv;

/**
 * How a {@link Tensor}'s elements are stored. Dimensions are always listed N, C, spatial...
 * whatever the layout; the layout only decides the strides. Filters are listed (K, C/groups,
 * kernel...) and stored K, C/groups, kernel... (OIHW) channels-first or K, kernel..., C/groups
 * (OHWI) channels-last.
 * The values are those of C's {@code conv_layout_t}.
 */
public enum Layout {
    /** NCW, NCHW, NCDHW. */
    CHANNELS_FIRST(conv_layout_t.CONV_LAYOUT_CHANNELS_FIRST),
    /** NWC, NHWC, NDHWC. */
    CHANNELS_LAST(conv_layout_t.CONV_LAYOUT_CHANNELS_LAST);

    private static final Layout[] VALUES = values();
    private final int value;

    Layout(int value) {
        this.value = value;
    }

    /**
     * The C value ({@code CONV_LAYOUT_...}).
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
    public static Layout fromValue(int value) {
        for (Layout v : VALUES)
            if (v.value == value) return v;
        throw new IllegalArgumentException("unknown conv_layout_t value " + value);
    }
}
