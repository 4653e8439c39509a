package org.libconv;

/**
 * {@link Status#INVALID_HANDLE}: a handle is NULL, of the wrong kind, or destroyed. The Java classes never pass such a handle (a closed object throws {@link IllegalStateException} first), so this shows only through misuse of the native layer.
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
