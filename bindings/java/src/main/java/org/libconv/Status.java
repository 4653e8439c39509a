package org.libconv;

/**
 * The result of a C call ({@code conv_status_t}). Every failure reaches Java as the
 * {@link ConvException} subclass of its status, e.g. {@link ShapeMismatchException} for
 * {@link #SHAPE_MISMATCH}.
 */
public enum Status {
    /** Success (never thrown). */
    SUCCESS(conv_status_t.CONV_STATUS_SUCCESS),
    /** An argument is out of range or an unknown enum value. */
    INVALID_ARGUMENT(conv_status_t.CONV_STATUS_INVALID_ARGUMENT),
    /** A handle is NULL, of the wrong kind, or destroyed. */
    INVALID_HANDLE(conv_status_t.CONV_STATUS_INVALID_HANDLE),
    /** Tensor dimensions do not agree with each other or with the descriptor. */
    SHAPE_MISMATCH(conv_status_t.CONV_STATUS_SHAPE_MISMATCH),
    /** Tensors disagree in dtype, layout or device, or with the context. */
    TYPE_MISMATCH(conv_status_t.CONV_STATUS_TYPE_MISMATCH),
    /** A valid request this build or device does not implement. */
    UNSUPPORTED(conv_status_t.CONV_STATUS_UNSUPPORTED),
    /** Host or device memory could not be allocated. */
    OUT_OF_MEMORY(conv_status_t.CONV_STATUS_OUT_OF_MEMORY),
    /** A caller-supplied workspace is smaller than the call needs. */
    WORKSPACE_TOO_SMALL(conv_status_t.CONV_STATUS_WORKSPACE_TOO_SMALL),
    /** A size or index computation would overflow. */
    OVERFLOW(conv_status_t.CONV_STATUS_OVERFLOW),
    /** The device or backend is not compiled in or not present. */
    NOT_AVAILABLE(conv_status_t.CONV_STATUS_NOT_AVAILABLE),
    /** A backend library (BLAS, CUDA, cuDNN, ...) reported an error. */
    BACKEND_ERROR(conv_status_t.CONV_STATUS_BACKEND_ERROR),
    /** A file could not be read or written. */
    IO_ERROR(conv_status_t.CONV_STATUS_IO_ERROR),
    /** A file is truncated, corrupt, or from another version or device. */
    BAD_FILE(conv_status_t.CONV_STATUS_BAD_FILE),
    /** A bug in libconv. */
    INTERNAL_ERROR(conv_status_t.CONV_STATUS_INTERNAL_ERROR),
    /**
     * The numerical guard ({@link Context#setCheckNumerics}) found a NaN or an infinity in an
     * output; unlike every other failure, the outputs have been written.
     */
    NUMERICAL_ERROR(conv_status_t.CONV_STATUS_NUMERICAL_ERROR);

    private static final Status[] VALUES = values();
    private final int value;

    Status(int value) {
        this.value = value;
    }

    /**
     * The C value ({@code CONV_STATUS_...}).
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
    public static Status fromValue(int value) {
        for (Status v : VALUES)
            if (v.value == value) return v;
        throw new IllegalArgumentException("unknown conv_status_t value " + value);
    }

    /**
     * libconv's English name of the status ("invalid argument").
     *
     * @return the name
     */
    @CFunction("conv_status_string")
    public String description() {
        return ConvNative.conv_status_string(value);
    }

    /** The name as the C library spells it, without a native call ("shape mismatch"). */
    String words() {
        return name().toLowerCase(java.util.Locale.ROOT).replace('_', ' ');
    }
}
