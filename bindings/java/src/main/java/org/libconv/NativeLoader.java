package org.libconv;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Loads the JNI library (libconvjni) and libconv itself, once, when the SWIG
 * class ConvNativeJNI is initialised. In order:
 * <ol>
 *   <li>the file named by the system property {@code org.libconv.jni.library};
 *   <li>{@code System.loadLibrary("convjni")}, i.e. a libconvjni on
 *       {@code java.library.path} (libconv.so.0 then comes from its RUNPATH
 *       {@code $ORIGIN} or the dynamic linker's usual places);
 *   <li>the copies inside this jar, under
 *       {@code org/libconv/native/<os>-<arch>/}: listed in
 *       {@code libraries.txt} in load order, extracted into a fresh private
 *       temporary directory (under {@code org.libconv.tmpdir}, default
 *       {@code java.io.tmpdir}), loaded with {@code System.load} and deleted
 *       again (a loaded library needs no file on Linux; elsewhere the files go
 *       at exit).
 * </ol>
 */
final class NativeLoader {
    static final String JNI_LIBRARY = "convjni";
    private static final String RESOURCES = "/org/libconv/native/";

    private static String source;

    private NativeLoader() {}

    static synchronized void load() {
        if (source != null) return;
        String explicit = System.getProperty("org.libconv.jni.library");
        if (explicit != null && !explicit.isEmpty()) {
            System.load(Paths.get(explicit).toAbsolutePath().toString());
            source = explicit;
            return;
        }
        UnsatisfiedLinkError onPath;
        try {
            System.loadLibrary(JNI_LIBRARY);
            source = "java.library.path";
            return;
        } catch (UnsatisfiedLinkError e) {
            onPath = e;
        }
        try {
            source = extractAndLoad();
        } catch (IOException | UnsatisfiedLinkError e) {
            UnsatisfiedLinkError error = new UnsatisfiedLinkError(
                    "libconv: cannot load the native library for " + platform() + ": not on "
                    + "java.library.path (" + onPath.getMessage() + ") and not loadable from the jar ("
                    + e + "). Set -Dorg.libconv.tmpdir to a directory that allows executables if "
                    + "the temporary directory is mounted noexec.");
            error.initCause(e);
            throw error;
        }
    }

    /** Where the native library came from (for diagnostics). */
    static synchronized String source() {
        return source;
    }

    /** "linux-x86_64", "linux-aarch64", ...: the jar's resource folder. */
    static String platform() {
        String os = System.getProperty("os.name", "unknown").toLowerCase(Locale.ROOT);
        String arch = System.getProperty("os.arch", "unknown").toLowerCase(Locale.ROOT);
        if (os.startsWith("linux")) os = "linux";
        else if (os.startsWith("mac") || os.startsWith("darwin")) os = "macos";
        else if (os.startsWith("windows")) os = "windows";
        if (arch.equals("amd64") || arch.equals("x86_64") || arch.equals("x64")) arch = "x86_64";
        else if (arch.equals("aarch64") || arch.equals("arm64")) arch = "aarch64";
        return os + "-" + arch;
    }

    private static String extractAndLoad() throws IOException {
        String folder = RESOURCES + platform() + "/";
        List<String> names = new ArrayList<>();
        try (InputStream in = NativeLoader.class.getResourceAsStream(folder + "libraries.txt")) {
            if (in == null) throw new IOException("this jar has no native library for " + platform());
            BufferedReader reader = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8));
            for (String line; (line = reader.readLine()) != null; ) {
                line = line.trim();
                if (!line.isEmpty() && !line.startsWith("#")) names.add(line);
            }
        }
        String tmp = System.getProperty("org.libconv.tmpdir", System.getProperty("java.io.tmpdir"));
        Path dir = Files.createTempDirectory(Paths.get(tmp), "libconv-");
        List<Path> files = new ArrayList<>();
        try {
            for (String name : names) {
                Path file = dir.resolve(name);
                try (InputStream in = NativeLoader.class.getResourceAsStream(folder + name)) {
                    if (in == null) throw new IOException("missing resource " + folder + name);
                    Files.copy(in, file, StandardCopyOption.REPLACE_EXISTING);
                }
                files.add(file);
            }
            // libconv first, so that libconvjni's dependency is already there.
            for (Path file : files) System.load(file.toAbsolutePath().toString());
        } finally {
            files.add(dir);
            for (Path file : files) {
                try {
                    Files.deleteIfExists(file);
                } catch (IOException e) {
                    file.toFile().deleteOnExit();
                }
            }
        }
        java.security.CodeSource code = NativeLoader.class.getProtectionDomain().getCodeSource();
        return "extracted from " + (code != null ? code.getLocation() : "the class path");
    }
}
