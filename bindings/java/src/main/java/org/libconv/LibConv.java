package org.libconv;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * Library-wide functions: versions, devices, the per-thread error message.
 *
 * <p>The native library is loaded the first time any class of this package calls into it; no
 * {@code System.loadLibrary} is needed (see the package documentation).
 */
public final class LibConv {
    /** {@code CONV_VERSION_MAJOR} of the header this jar was built from. */
    public static final int HEADER_VERSION_MAJOR = ConvNativeConstants.CONV_VERSION_MAJOR;
    /** {@code CONV_VERSION_MINOR} of the header this jar was built from. */
    public static final int HEADER_VERSION_MINOR = ConvNativeConstants.CONV_VERSION_MINOR;
    /** {@code CONV_VERSION_PATCH} of the header this jar was built from. */
    public static final int HEADER_VERSION_PATCH = ConvNativeConstants.CONV_VERSION_PATCH;
    /** {@code CONV_VERSION_NUMBER}: MAJOR*10000 + MINOR*100 + PATCH, comparable with {@link #version()}. */
    public static final int HEADER_VERSION = ConvNativeConstants.CONV_VERSION_NUMBER;
    /** {@code CONV_FIND_REPEATS}: how often {@link Conv#findAlgorithms} times each candidate. */
    public static final int FIND_REPEATS = ConvNativeConstants.CONV_FIND_REPEATS;

    private LibConv() {}

    /**
     * The version of the loaded native library, as MAJOR*10000 + MINOR*100 + PATCH.
     *
     * @return the version number, comparable with {@link #HEADER_VERSION}
     */
    @CFunction("conv_version")
    public static int version() {
        return (int) ConvNative.conv_version();
    }

    /**
     * The version of the loaded native library as text.
     *
     * @return "MAJOR.MINOR.PATCH"
     */
    @CFunction("conv_version_string")
    public static String versionString() {
        return ConvNative.conv_version_string();
    }

    /**
     * The message of the last failed libconv call on the calling thread, "" if the last call
     * succeeded. Rarely needed: every failure already throws a {@link ConvException} carrying
     * this message.
     *
     * @return the message
     */
    @CFunction("conv_last_error")
    public static String lastError() {
        return ConvNative.conv_last_error();
    }

    /**
     * The number of devices of a kind: 1 for {@link Device#CPU}; for {@link Device#CUDA} the
     * number of usable GPUs, 0 without a GPU or without CUDA support in the build. With 0,
     * {@link #lastError()} says why (the library looked for and not found, no driver, no GPU).
     *
     * @param device the kind
     * @return the count
     */
    @CFunction("conv_device_count")
    public static int deviceCount(Device device) {
        int[] count = new int[1];
        ConvNative.conv_device_count(device.value(), count);
        return count[0];
    }

    /**
     * The names of every algorithm (solver) of a device kind's engine, in its order of
     * preference: what {@link Conv#setAlgorithm(Op, String)} may force there, also the solvers
     * that have no {@link Algorithm} constant. A build without the CUDA engine still lists its
     * solvers.
     *
     * @param device the kind
     * @return the names, as {@link Algorithm#libraryName()} and the verbose trace give them
     */
    @CFunction({"conv_algo_list", "conv_algo_name"})
    public static List<String> algorithmNames(Device device) {
        int[] count = new int[1];
        ConvNative.conv_algo_list(device.value(), 0, null, count);
        int[] ids = new int[count[0]];
        ConvNative.conv_algo_list(device.value(), ids.length, ids, count);
        List<String> names = new ArrayList<>(ids.length);
        for (int id : ids) names.add(ConvNative.conv_algo_name(id));
        return Collections.unmodifiableList(names);
    }

    /**
     * Where the native library was loaded from: {@code "java.library.path"}, the path given by
     * the system property {@code org.libconv.jni.library}, or "extracted from" the jar.
     *
     * @return a description, for diagnostics
     */
    public static String nativeLibrarySource() {
        version(); // loads the library
        return NativeLoader.source();
    }

    /**
     * {@code java -jar libconv.jar}: prints the versions, where the native library came from
     * and the devices, as a quick check of an installation.
     *
     * @param args ignored
     */
    public static void main(String[] args) {
        System.out.println("libconv " + versionString() + " (jar built against header "
                + HEADER_VERSION_MAJOR + "." + HEADER_VERSION_MINOR + "." + HEADER_VERSION_PATCH + ")");
        System.out.println("native library: " + nativeLibrarySource());
        for (Device device : Device.values()) {
            int n = deviceCount(device);
            String why = n == 0 ? lastError() : "";
            System.out.println(device + " devices: " + n + (why.isEmpty() ? "" : " (" + why + ")"));
        }
    }
}
