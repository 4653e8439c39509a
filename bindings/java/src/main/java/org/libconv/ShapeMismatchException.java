package org.libconv;

/**
 * {@link Status#SHAPE_MISMATCH}: tensor dimensions do not agree with each other or with the descriptor (e.g. input channels != filter channels x groups).
 */
public class ShapeMismatchException extends ConvException {
    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception.
     *
     * @param function the C function that failed, or null
     * @param message the C message, or null
     */
    public ShapeMismatchException(String function, String message) {
        super(Status.SHAPE_MISMATCH, function, message);
    }
}
