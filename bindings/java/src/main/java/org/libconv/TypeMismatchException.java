package org.libconv;

/**
 * {@link Status#TYPE_MISMATCH}: tensors disagree in dtype, layout or device, or with the context.
 */
public class TypeMismatchException extends ConvException {
    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception.
     *
     * @param function the C function that failed, or null
     * @param message the C message, or null
     */
    public TypeMismatchException(String function, String message) {
        super(Status.TYPE_MISMATCH, function, message);
    }
}
