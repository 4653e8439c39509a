package org.libconv;

/**
 * {@link Status#OVERFLOW}: a size or index computation would overflow int64 (or what a backend can index).
 */
public class OverflowException extends ConvException {
    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception.
     *
     * @param function the C function that failed, or null
     * @param message the C message, or null
     */
    public OverflowException(String function, String message) {
        super(Status.OVERFLOW, function, message);
    }
}
