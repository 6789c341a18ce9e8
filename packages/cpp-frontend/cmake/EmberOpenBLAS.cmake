# BLAS for libember: scipy-openblas32, OpenBLAS as SciPy and NumPy ship it on PyPI (LP64
# indices, every symbol prefixed with `scipy_`: scipy_cblas_sgemm, ...; DYNAMIC_ARCH, so
# one binary picks its kernels for the CPU it runs on). It comes from pip, as a build
# requirement of the wheel, so no system BLAS package is needed and nothing is downloaded
# by CMake.
#
# Defines the imported target `ember_openblas` (the shared library and its headers) and
# ember_install_openblas(<libdir>), which installs the library beside libember so that the
# installed libember (RPATH $ORIGIN) needs nothing else at run time.
#
# Where the package is:
#   -DEMBER_OPENBLAS_DIR=<dir>   a directory holding include/cblas.h and lib/libscipy_openblas.so
#                                (the scipy_openblas32 package directory, or any OpenBLAS
#                                build with the scipy_ prefix laid out the same way)
#   otherwise                    `python -c "import scipy_openblas32"` with the Python CMake
#                                finds (Python3_EXECUTABLE; scikit-build-core passes its own)

option(EMBER_USE_OPENBLAS "Run matmul through scipy-openblas32" ON)
option(EMBER_BUNDLE_OPENBLAS "Install libscipy_openblas.so beside libember" ON)
set(EMBER_OPENBLAS_DIR "" CACHE PATH
    "scipy-openblas32's package directory (include/, lib/); empty: ask Python")

function(_ember_openblas_from_python out_include out_lib out_name out_license)
    if(NOT Python3_EXECUTABLE AND DEFINED Python_EXECUTABLE)
        set(Python3_EXECUTABLE "${Python_EXECUTABLE}")  # scikit-build-core's spelling
    endif()
    find_package(Python3 COMPONENTS Interpreter QUIET)
    if(NOT Python3_Interpreter_FOUND)
        return()
    endif()
    execute_process(
        COMMAND "${Python3_EXECUTABLE}" -c
            "import importlib.metadata as m, scipy_openblas32 as s
lic = [str(f.locate()) for f in m.files('scipy-openblas32') or () if 'LICENSE' in f.name.upper()]
print(s.get_include_dir(), s.get_lib_dir(), s.get_library(), (lic + [''])[0], sep=';', end='')"
        RESULT_VARIABLE result
        OUTPUT_VARIABLE output
        ERROR_QUIET)
    if(result EQUAL 0)
        list(GET output 0 include_dir)
        list(GET output 1 lib_dir)
        list(GET output 2 name)
        list(GET output 3 license)
        set(${out_license} "${license}" PARENT_SCOPE)
        set(${out_include} "${include_dir}" PARENT_SCOPE)
        set(${out_lib} "${lib_dir}" PARENT_SCOPE)
        set(${out_name} "${name}" PARENT_SCOPE)
    else()
        message(STATUS "ember: ${Python3_EXECUTABLE} cannot import scipy_openblas32")
    endif()
endfunction()

if(EMBER_USE_OPENBLAS AND NOT TARGET ember_openblas)
    set(_ember_blas_name scipy_openblas)
    if(EMBER_OPENBLAS_DIR)
        set(_ember_blas_include "${EMBER_OPENBLAS_DIR}/include")
        set(_ember_blas_libdir "${EMBER_OPENBLAS_DIR}/lib")
    else()
        _ember_openblas_from_python(_ember_blas_include _ember_blas_libdir _ember_blas_name
                                    EMBER_OPENBLAS_LICENSE)
    endif()
    if(_ember_blas_libdir)
        find_library(EMBER_OPENBLAS_LIBRARY NAMES ${_ember_blas_name}
                     PATHS "${_ember_blas_libdir}" NO_DEFAULT_PATH NO_CACHE)
        find_path(EMBER_OPENBLAS_INCLUDE_DIR cblas.h
                  PATHS "${_ember_blas_include}" NO_DEFAULT_PATH NO_CACHE)
    endif()
    if(NOT EMBER_OPENBLAS_LIBRARY OR NOT EMBER_OPENBLAS_INCLUDE_DIR)
        if(EMBER_OPENBLAS_DIR)
            set(_ember_where "no include/cblas.h and lib/lib${_ember_blas_name}.so in ${EMBER_OPENBLAS_DIR}")
        elseif(_ember_blas_libdir)
            set(_ember_where "no lib${_ember_blas_name}.so or cblas.h where Python says it is")
        elseif(Python3_EXECUTABLE)
            set(_ember_where "${Python3_EXECUTABLE} cannot import scipy_openblas32")
        else()
            set(_ember_where "no Python interpreter found to ask")
        endif()
        message(FATAL_ERROR
            "ember: scipy-openblas32 not found (${_ember_where}). Either\n"
            "  pip install scipy-openblas32   (into the Python CMake finds: -DPython3_EXECUTABLE=...)\n"
            "  -DEMBER_OPENBLAS_DIR=<dir with include/cblas.h and lib/lib${_ember_blas_name}.so>\n"
            "  -DEMBER_USE_OPENBLAS=OFF       (matmul without BLAS: much slower)")
    endif()
    # The library is installed under its file name, which must be its SONAME (the name
    # libember records as NEEDED); scipy-openblas32 ships an unversioned one.
    file(REAL_PATH "${EMBER_OPENBLAS_LIBRARY}" EMBER_OPENBLAS_LIBRARY)
    add_library(ember_openblas SHARED IMPORTED)
    set_target_properties(ember_openblas PROPERTIES
        IMPORTED_LOCATION "${EMBER_OPENBLAS_LIBRARY}"
        # SYSTEM: its headers' warnings are not ours
        INTERFACE_SYSTEM_INCLUDE_DIRECTORIES "${EMBER_OPENBLAS_INCLUDE_DIR}"
        INTERFACE_INCLUDE_DIRECTORIES "${EMBER_OPENBLAS_INCLUDE_DIR}")
    message(STATUS "ember: OpenBLAS ${EMBER_OPENBLAS_LIBRARY}")
endif()

# ember_install_openblas(<libdir>): install the OpenBLAS libember linked beside it, with
# its license (BSD; it names what is statically linked into it: LAPACK, libgfortran), which
# a binary redistribution must carry.
function(ember_install_openblas libdir)
    if(EMBER_USE_OPENBLAS AND EMBER_BUNDLE_OPENBLAS)
        install(FILES "${EMBER_OPENBLAS_LIBRARY}" DESTINATION "${libdir}"
                PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE
                            WORLD_READ WORLD_EXECUTE)
        if(EMBER_OPENBLAS_LICENSE)
            install(FILES "${EMBER_OPENBLAS_LICENSE}" DESTINATION "${libdir}"
                    RENAME "scipy_openblas32-LICENSE.txt")
        elseif(EXISTS "${EMBER_OPENBLAS_DIR}/LICENSE.txt")
            install(FILES "${EMBER_OPENBLAS_DIR}/LICENSE.txt" DESTINATION "${libdir}"
                    RENAME "scipy_openblas32-LICENSE.txt")
        endif()
    endif()
endfunction()
