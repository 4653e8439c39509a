package org.libconv;

/**
 * {@link Status#NOT_AVAILABLE}: the device or backend is not compiled in or not present (e.g. a CUDA context without a GPU).
 */
public class NotAvailableException extends ConvException {
    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception.
     *
     * @param function the C function that failed, or null
     * @param message the C message, or null
     */
    public NotAvailableException(String function, String message) {
        super(Status.NOT_AVAILABLE, function, message);
    }
}
