package org.libconv;

/**
 * {@link Status#IO_ERROR}: a file could not be read or written (e.g. {@link Context#loadTuning} of a missing file).
 */
public class IoErrorException extends ConvException {
    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception.
     *
     * @param function the C function that failed, or null
     * @param message the C message, or null
     */
    public IoErrorException(String function, String message) {
        super(Status.IO_ERROR, function, message);
    }
}
