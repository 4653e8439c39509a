package org.libconv;

import java.nio.charset.StandardCharsets;

/**
 * A libconv call failed. Each {@link Status} has its own subclass
 * ({@link ShapeMismatchException}, {@link InvalidArgumentException}, ...), so a caller can catch
 * the cases it handles and let the rest go. The message is the C library's
 * ({@code conv_last_error()} of the failed call, read on the calling thread inside the same
 * native call), which names the argument and the numbers involved, prefixed with the C function:
 * {@code "conv_forward: input channels 64 != filter channels 32 x groups 1"}. A failed call
 * changed nothing, with one documented exception: {@link NumericalErrorException}.
 *
 * <p>Argument errors found on the Java side before any native call (a heap buffer, a buffer in
 * the wrong byte order, an array of the wrong length) are {@link IllegalArgumentException}s;
 * use of a closed object is an {@link IllegalStateException}; a required null argument is a
 * {@link NullPointerException}.
 */
public class ConvException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** The conv_status_t value. */
    private final int code;
    /** The C function that failed, or null. */
    private final String function;
    /** The C message, never null. */
    private final String nativeMessage;

    /**
     * Creates an exception for a status.
     *
     * @param status the status (not {@link Status#SUCCESS})
     * @param function the C function that failed, or null
     * @param message the C message, or null
     */
    protected ConvException(Status status, String function, String message) {
        this(status.value(), function, message);
    }

    private ConvException(int code, String function, String message) {
        super(format(code, function, message));
        this.code = code;
        this.function = function;
        this.nativeMessage = message == null ? "" : message;
    }

    private static String format(int code, String function, String message) {
        String text = message == null || message.isEmpty() ? statusWords(code) : message;
        return function == null ? text : function + ": " + text;
    }

    private static String statusWords(int code) {
        try {
            return Status.fromValue(code).words();
        } catch (IllegalArgumentException e) {
            return "status " + code;
        }
    }

    /**
     * The status of the failed call.
     *
     * @return the status, or null for a value this version does not know
     */
    public Status status() {
        try {
            return Status.fromValue(code);
        } catch (IllegalArgumentException e) {
            return null;
        }
    }

    /**
     * The status as its C value.
     *
     * @return the {@code conv_status_t} value
     */
    public int code() {
        return code;
    }

    /**
     * The C function that failed.
     *
     * @return its name ({@code "conv_forward"}), or null when not known
     */
    public String function() {
        return function;
    }

    /**
     * The C library's message alone, without the function name.
     *
     * @return the message of {@code conv_last_error()}, possibly empty
     */
    public String nativeMessage() {
        return nativeMessage;
    }

    /** Called by the JNI code when a C function returns a failure. */
    static ConvException fromNative(int code, String function, byte[] message) {
        return of(code, function, message == null ? "" : new String(message, StandardCharsets.UTF_8));
    }

    /** The exception of a status: its subclass, or this class for a status not known here. */
    static ConvException of(int code, String function, String message) {
        Status status;
        try {
            status = Status.fromValue(code);
        } catch (IllegalArgumentException e) {
            return new ConvException(code, function, message);
        }
        switch (status) {
            case INVALID_ARGUMENT:
                return new InvalidArgumentException(function, message);
            case INVALID_HANDLE:
                return new InvalidHandleException(function, message);
            case SHAPE_MISMATCH:
                return new ShapeMismatchException(function, message);
            case TYPE_MISMATCH:
                return new TypeMismatchException(function, message);
            case UNSUPPORTED:
                return new UnsupportedException(function, message);
            case OUT_OF_MEMORY:
                return new OutOfMemoryException(function, message);
            case WORKSPACE_TOO_SMALL:
                return new WorkspaceTooSmallException(function, message);
            case OVERFLOW:
                return new OverflowException(function, message);
            case NOT_AVAILABLE:
                return new NotAvailableException(function, message);
            case BACKEND_ERROR:
                return new BackendErrorException(function, message);
            case IO_ERROR:
                return new IoErrorException(function, message);
            case BAD_FILE:
                return new BadFileException(function, message);
            case INTERNAL_ERROR:
                return new InternalErrorException(function, message);
            case NUMERICAL_ERROR:
                return new NumericalErrorException(function, message);
            default:
                return new ConvException(code, function, message);
        }
    }
}
