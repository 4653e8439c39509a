package org.libconv;

import java.nio.Buffer;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.DoubleBuffer;
import java.nio.FloatBuffer;
import java.nio.ReadOnlyBufferException;
import java.nio.ShortBuffer;

/** Checks on the NIO buffers handed to native code. */
final class Buffers {
    private Buffers() {}

    static ByteOrder order(Buffer buffer) {
        if (buffer instanceof ByteBuffer) return ((ByteBuffer) buffer).order();
        if (buffer instanceof FloatBuffer) return ((FloatBuffer) buffer).order();
        if (buffer instanceof DoubleBuffer) return ((DoubleBuffer) buffer).order();
        if (buffer instanceof ShortBuffer) return ((ShortBuffer) buffer).order();
        throw new IllegalArgumentException("unsupported buffer type " + buffer.getClass().getName());
    }

    static int elementSize(Buffer buffer) {
        if (buffer instanceof ByteBuffer) return 1;
        if (buffer instanceof ShortBuffer) return 2;
        if (buffer instanceof FloatBuffer) return 4;
        if (buffer instanceof DoubleBuffer) return 8;
        throw new IllegalArgumentException("unsupported buffer type " + buffer.getClass().getName());
    }

    /**
     * A buffer libconv reads or writes in place: direct, and (unless raw) in native byte order,
     * so that Java and C see the same numbers.
     */
    static void checkDirect(Buffer buffer, String name, boolean raw) {
        if (buffer == null) throw new NullPointerException(name + " is null");
        if (!buffer.isDirect())
            throw new IllegalArgumentException(name + " is a heap buffer: libconv reads and writes memory "
                    + "in place and needs a direct buffer, e.g. ByteBuffer.allocateDirect(bytes)"
                    + ".order(ByteOrder.nativeOrder())" + (raw ? "" : ".asFloatBuffer()")
                    + " (or use the copying array overloads)");
        if (!raw && order(buffer) != ByteOrder.nativeOrder())
            throw new IllegalArgumentException(name + " is in " + order(buffer) + " byte order but libconv "
                    + "uses the native order " + ByteOrder.nativeOrder() + ": create it with "
                    + ".order(ByteOrder.nativeOrder())");
    }

    static void checkWritable(Buffer buffer, String name) {
        if (buffer.isReadOnly()) throw new ReadOnlyBufferException();
    }

    /** Checks that a typed buffer fits a tensor's dtype (ByteBuffers fit every dtype). */
    static void checkDType(Buffer buffer, DType dtype, String name) {
        boolean ok;
        if (buffer instanceof ByteBuffer) ok = true;
        else if (buffer instanceof FloatBuffer) ok = dtype == DType.FLOAT32;
        else if (buffer instanceof DoubleBuffer) ok = dtype == DType.FLOAT64;
        else if (buffer instanceof ShortBuffer) ok = dtype == DType.FLOAT16 || dtype == DType.BFLOAT16;
        else ok = false;
        if (!ok)
            throw new IllegalArgumentException("a " + buffer.getClass().getSimpleName().replaceAll("^Direct|[RU]$", "")
                    + " " + name + " does not hold " + dtype + " elements");
    }

    /** The remaining part, as a buffer of its own (position 0) of exactly `elements` elements. */
    static Buffer slice(Buffer buffer, long elements, String name) {
        if (buffer.remaining() < elements)
            throw new IllegalArgumentException(name + " has " + buffer.remaining() + " elements remaining, "
                    + elements + " needed");
        Buffer slice;
        if (buffer instanceof ByteBuffer) slice = ((ByteBuffer) buffer).slice().order(((ByteBuffer) buffer).order());
        else if (buffer instanceof FloatBuffer) slice = ((FloatBuffer) buffer).slice();
        else if (buffer instanceof DoubleBuffer) slice = ((DoubleBuffer) buffer).slice();
        else if (buffer instanceof ShortBuffer) slice = ((ShortBuffer) buffer).slice();
        else throw new IllegalArgumentException("unsupported buffer type " + buffer.getClass().getName());
        slice.limit((int) elements);
        return slice;
    }
}
