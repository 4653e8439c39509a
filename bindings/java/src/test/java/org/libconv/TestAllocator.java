package org.libconv;

/** The counting native allocator of src/test/native (system property libconv.test.allocator). */
final class TestAllocator {
    static final String LIBRARY = System.getProperty("libconv.test.allocator");

    static {
        if (LIBRARY != null) System.load(LIBRARY);
    }

    private TestAllocator() {}

    static native long allocFunction();

    static native long freeFunction();

    static native long allocations();

    static native long releases();

    static native long lastUser();
}
