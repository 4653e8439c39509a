package org.libconv;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Names the functions of the C API ({@code conv.h}) that a method or
 * constructor of this package calls, so that the C documentation of each
 * can be found from the Java one. The test suite checks that every function
 * of {@code conv.h} is named here by some public method.
 */
@Documented
@Retention(RetentionPolicy.RUNTIME)
@Target({ElementType.METHOD, ElementType.CONSTRUCTOR})
public @interface CFunction {
    /**
     * The C functions, e.g. {@code "conv_forward"}.
     *
     * @return their names
     */
    String[] value();
}
