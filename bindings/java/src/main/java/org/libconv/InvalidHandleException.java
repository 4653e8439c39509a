package org.libconv;

/**
 * {@link Status#INVALID_HANDLE}: a handle is NULL, of the wrong kind, or destroyed. The Java classes never pass such a handle (a closed object throws {@link IllegalStateException} first); this shows when a {@link Plan} is used after its context was closed (a plan outlives its context, as in C, but can no longer run).
 */
public class InvalidHandleException extends ConvException {
    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception.
     *
     * @param function the C function that failed, or null
     * @param message the C message, or null
     */
    public InvalidHandleException(String function, String message) {
        super(Status.INVALID_HANDLE, function, message);
    }
}
