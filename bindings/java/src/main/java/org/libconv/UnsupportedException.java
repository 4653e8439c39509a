package org.libconv;

/**
 * {@link Status#UNSUPPORTED}: a valid request this build or device does not implement (e.g. computing in FLOAT16 on the CPU, or a forced algorithm that does not apply).
 */
public class UnsupportedException extends ConvException {
    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception.
     *
     * @param function the C function that failed, or null
     * @param message the C message, or null
     */
    public UnsupportedException(String function, String message) {
        super(Status.UNSUPPORTED, function, message);
    }
}
