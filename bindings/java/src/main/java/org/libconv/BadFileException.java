package org.libconv;

/**
 * {@link Status#BAD_FILE}: a file is truncated, corrupt, or from another libconv version or device.
 */
public class BadFileException extends ConvException {
    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception.
     *
     * @param function the C function that failed, or null
     * @param message the C message, or null
     */
    public BadFileException(String function, String message) {
        super(Status.BAD_FILE, function, message);
    }
}
