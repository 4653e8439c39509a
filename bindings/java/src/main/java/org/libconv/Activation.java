package org.libconv;

/**
 * An activation fused into {@link Conv#forward}, applied after the bias.
 * The values are those of C's {@code conv_activation_t}.
 */
public enum Activation {
    /** No activation. */
    NONE(conv_activation_t.CONV_ACTIVATION_NONE),
    /** max(0, y). */
    RELU(conv_activation_t.CONV_ACTIVATION_RELU);

    private static final Activation[] VALUES = values();
    private final int value;

    Activation(int value) {
        this.value = value;
    }

    /**
     * The C value ({@code CONV_ACTIVATION_...}).
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
    public static Activation fromValue(int value) {
        for (Activation v : VALUES)
            if (v.value == value) return v;
        throw new IllegalArgumentException("unknown conv_activation_t value " + value);
    }
}
