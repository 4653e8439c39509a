package org.libconv;

/**
 * {@link Status#INTERNAL_ERROR}: a bug in libconv: please report it with the message.
 */
public class InternalErrorException extends ConvException {
    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception.
     *
     * @param function the C function that failed, or null
     * @param message the C message, or null
     */
    public InternalErrorException(String function, String message) {
        super(Status.INTERNAL_ERROR, function, message);
    }
}
