package org.libconv;

/**
 * {@link Status#INVALID_ARGUMENT}: an argument is out of range or an unknown enum value (e.g. zero threads, a negative stride).
 */
public class InvalidArgumentException extends ConvException {
    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception.
     *
     * @param function the C function that failed, or null
     * @param message the C message, or null
     */
    public InvalidArgumentException(String function, String message) {
        super(Status.INVALID_ARGUMENT, function, message);
    }
}
