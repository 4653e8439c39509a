package org.libconv;

/**
 * {@link Status#BACKEND_ERROR}: a backend library (BLAS, CUDA, cuDNN, ...) reported an error.
 */
public class BackendErrorException extends ConvException {
    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception.
     *
     * @param function the C function that failed, or null
     * @param message the C message, or null
     */
    public BackendErrorException(String function, String message) {
        super(Status.BACKEND_ERROR, function, message);
    }
}
