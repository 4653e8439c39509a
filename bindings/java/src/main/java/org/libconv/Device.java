package org.libconv;

/**
 * A kind of device a {@link Context} computes on.
 * The values are those of C's {@code conv_device_t}.
 */
public enum Device {
    /** The host CPU (index 0). */
    CPU(conv_device_t.CONV_DEVICE_CPU),
    /** An NVIDIA GPU through CUDA/cuDNN, where the build and the machine have one. */
    CUDA(conv_device_t.CONV_DEVICE_CUDA);

    private static final Device[] VALUES = values();
    private final int value;

    Device(int value) {
        this.value = value;
    }

    /**
     * The C value ({@code CONV_DEVICE_...}).
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
    public static Device fromValue(int value) {
        for (Device v : VALUES)
            if (v.value == value) return v;
        throw new IllegalArgumentException("unknown conv_device_t value " + value);
    }
}
