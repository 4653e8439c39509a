package org.libconv;

/**
 * {@link Status#OUT_OF_MEMORY}: host or device memory could not be allocated; nothing was changed.
 */
public class OutOfMemoryException extends ConvException {
    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception.
     *
     * @param function the C function that failed, or null
     * @param message the C message, or null
     */
    public OutOfMemoryException(String function, String message) {
        super(Status.OUT_OF_MEMORY, function, message);
    }
}
