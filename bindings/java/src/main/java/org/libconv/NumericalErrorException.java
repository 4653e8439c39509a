package org.libconv;

/**
 * {@link Status#NUMERICAL_ERROR}: the numerical guard ({@link Context#setCheckNumerics}) found a
 * NaN or an infinity in an output; the message names the pass, the tensor and the index of the
 * first bad element. Unlike every other failure, the outputs have been written.
 */
public class NumericalErrorException extends ConvException {
    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception.
     *
     * @param function the C function that failed, or null
     * @param message the C message, or null
     */
    public NumericalErrorException(String function, String message) {
        super(Status.NUMERICAL_ERROR, function, message);
    }
}
