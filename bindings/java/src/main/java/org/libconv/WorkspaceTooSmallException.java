package org.libconv;

/**
 * {@link Status#WORKSPACE_TOO_SMALL}: a caller-supplied (wrapped) workspace is smaller than the call needs; the message names both sizes.
 */
public class WorkspaceTooSmallException extends ConvException {
    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception.
     *
     * @param function the C function that failed, or null
     * @param message the C message, or null
     */
    public WorkspaceTooSmallException(String function, String message) {
        super(Status.WORKSPACE_TOO_SMALL, function, message);
    }
}
