package org.libconv;

import java.util.Arrays;

/**
 * The objects one native call uses, pinned (see NativeObject) for its
 * duration and unpinned together, in a try-with-resources block:
 * <pre>
 * try (Pins p = new Pins()) {
 *     ConvNative.conv_forward(p.pin(ctx), p.pin(conv), p.pin(x), ...);
 * }
 * </pre>
 * Arguments are evaluated left to right; if one pin fails (a closed object)
 * the ones already taken are released.
 */
final class Pins implements AutoCloseable {
    private NativeObject[] held = new NativeObject[8];
    private int count;

    /** The handle of a required object (NullPointerException naming it if null). */
    long pin(NativeObject object, String name) {
        if (object == null) throw new NullPointerException(name + " is null");
        return pin(object);
    }

    /** The handle of an optional object, 0 for null. */
    long pin(NativeObject object) {
        if (object == null) return 0;
        long handle = object.pin();
        if (count == held.length) held = Arrays.copyOf(held, 2 * count);
        held[count++] = object;
        return handle;
    }

    @Override
    public void close() {
        while (count > 0) {
            held[--count].unpin();
            held[count] = null;
        }
    }
}
