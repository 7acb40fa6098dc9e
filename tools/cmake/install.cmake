# install.cmake - the install tree and the .deb; included by CMakeLists.txt after the targets.
#   cmake --install build --prefix P      (cpack -G DEB in build/ packages the same tree under /usr)
#   P/bin/swin                            the command; finds P/share/swin/digits relative to itself
#   P/lib/libswin.so.0.1, libswin.a       one compilation of the sources, shared and static
#   P/include/swin.h                      model, session, forward
#   P/include/swin/image.h, preprocess.h  decoding and timm/HF preprocessing (image file -> input)
#   P/share/swin/digits/                  the embedded default model
#   P/share/swin/imagenet_classes.txt     the ImageNet-1k class names
#   P/lib/pkgconfig/swin.pc               pkg-config swin (--static adds the dependencies)
#   P/lib/cmake/swin/                     find_package(swin): swin::swin (shared), swin::swin_static
# The tree is relocatable (swin.pc and swinConfig.cmake locate the prefix from where they lie), so
# the install directories must be relative to the prefix. tests/cli_install.sh checks all of it.
include(CMakePackageConfigHelpers)

foreach(dir BINDIR LIBDIR INCLUDEDIR DATADIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${dir}}")
    message(FATAL_ERROR "swin: CMAKE_INSTALL_${dir} is '${CMAKE_INSTALL_${dir}}'; the install tree is "
                        "relocatable, so it must be relative to the prefix (e.g. lib/x86_64-linux-gnu)")
  endif()
endforeach()
set(SWIN_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/swin)

# ---- what the installed targets carry
# In the build tree swin_lib and swin_shared get everything from swin_objects. Installed, both
# carry include/ only; a program linking libswin.a also links its dependencies ($<LINK_ONLY:>),
# a program linking libswin.so needs nothing more.
foreach(t swin_lib swin_shared)
  target_include_directories(${t} INTERFACE $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  if(SWIN_SANITIZE)   # instrumented code needs the sanitizer runtimes in the program that loads it
    target_link_options(${t} INTERFACE $<INSTALL_INTERFACE:-fsanitize=address,undefined>)
  endif()
endforeach()
target_include_directories(swin_shared INTERFACE $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/src>)
set_target_properties(swin swin_shared PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)  # e.g. the CUDA libraries
if(SWIN_HAVE_CUDA)
  # libswin.so uses the shared CUDA runtime it names (CUDA::cudart), not a second, static copy
  set_target_properties(swin_shared PROPERTIES CUDA_RUNTIME_LIBRARY Shared)
endif()

# swin_link_dep(LIB [NAME]): LIB (a file) in swin.pc's Libs.private, as -lNAME when it is the
# plain lib<NAME>.so / .a; with NAME also an imported target swin::dep_NAME in libswin.a's link
# interface, which swinConfig.cmake defines again by finding the library by name or by soname
# (the runtime package's libcjson.so.1 will do) rather than through the library's own CMake
# config: Debian's cJSON config declares a bare `cjson` target whose include directory lacks cjson/.
set(SWIN_PC_LIBS_PRIVATE "")
set(SWIN_CONFIG_DEPS "")
function(swin_link_dep lib)
  get_filename_component(dir "${lib}" DIRECTORY)
  get_filename_component(file "${lib}" NAME)
  if(file MATCHES "^lib(.+)\\.(so|a)$")
    set(flag "-l${CMAKE_MATCH_1}")
    string(FIND " ${SWIN_PC_LIBS_PRIVATE} " " -L${dir} " seen)
    if(NOT dir IN_LIST CMAKE_C_IMPLICIT_LINK_DIRECTORIES AND seen EQUAL -1)
      set(flag "-L${dir} ${flag}")
    endif()
  else()
    set(flag "${lib}")
  endif()
  string(APPEND SWIN_PC_LIBS_PRIVATE " ${flag}")
  set(SWIN_PC_LIBS_PRIVATE "${SWIN_PC_LIBS_PRIVATE}" PARENT_SCOPE)
  if(ARGC GREATER 1)
    set(name ${ARGV1})
    get_filename_component(real "${lib}" REALPATH)
    get_filename_component(real "${real}" NAME)
    string(REGEX REPLACE "^(lib[^.]+\\.so\\.[0-9]+).*$" "\\1" soname "${real}")
    string(APPEND SWIN_CONFIG_DEPS "_swin_dep(${name} NAMES ${name} ${soname} HINTS \"${dir}\")\n")
    set(SWIN_CONFIG_DEPS "${SWIN_CONFIG_DEPS}" PARENT_SCOPE)
    target_link_libraries(swin_lib INTERFACE $<INSTALL_INTERFACE:$<LINK_ONLY:swin::dep_${name}>>)
  endif()
endfunction()

swin_link_dep(${CJSON_LIBRARY} cjson)
swin_link_dep(${JPEG_LIBRARY} jpeg)
if(OpenMP_C_FOUND)
  foreach(lib ${OpenMP_C_LIB_NAMES})     # gcc: gomp;pthread, clang: omp
    if(NOT lib STREQUAL "pthread")
      swin_link_dep(${OpenMP_${lib}_LIBRARY} ${lib})
    endif()
  endforeach()
endif()
if(SWIN_HAVE_CUDA)
  foreach(lib cudart cublas cublasLt)
    get_target_property(loc CUDA::${lib} IMPORTED_LOCATION)
    swin_link_dep(${loc})
    target_link_libraries(swin_lib INTERFACE $<INSTALL_INTERFACE:$<LINK_ONLY:CUDA::${lib}>>)
  endforeach()
  if(NVJPEG_INCLUDE_DIR AND NVJPEG_LIBRARY)
    swin_link_dep(${NVJPEG_LIBRARY} nvjpeg)
  endif()
  # the kernels' host code is C++ (nvcc): a C program linking libswin.a needs the C++ runtime
  string(APPEND SWIN_PC_LIBS_PRIVATE " -lstdc++")
  target_link_libraries(swin_lib INTERFACE $<INSTALL_INTERFACE:$<LINK_ONLY:stdc++>>)
endif()
string(APPEND SWIN_PC_LIBS_PRIVATE " -lpthread -lm")
target_link_libraries(swin_lib INTERFACE $<INSTALL_INTERFACE:$<LINK_ONLY:Threads::Threads>>
                                         $<INSTALL_INTERFACE:$<LINK_ONLY:m>>)
string(STRIP "${SWIN_PC_LIBS_PRIVATE}" SWIN_PC_LIBS_PRIVATE)
set(SWIN_PC_LIBS_EXTRA "")
if(SWIN_SANITIZE)
  set(SWIN_PC_LIBS_EXTRA " -fsanitize=address,undefined")
endif()
set(SWIN_CONFIG_CUDA ${SWIN_HAVE_CUDA})

# ---- files
install(TARGETS swin RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS swin_shared swin_lib EXPORT swinTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(FILES ${PROJECT_SOURCE_DIR}/src/swin.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${PROJECT_SOURCE_DIR}/src/image/image.h ${PROJECT_SOURCE_DIR}/src/image/preprocess.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/swin)
install(FILES ${PROJECT_SOURCE_DIR}/weights/digits/config.json ${PROJECT_SOURCE_DIR}/weights/digits/model.safetensors
        DESTINATION ${SWIN_INSTALL_DATADIR}/digits)
install(FILES ${PROJECT_SOURCE_DIR}/models/imagenet_classes.txt DESTINATION ${SWIN_INSTALL_DATADIR})

# pkg-config: prefix relative to the .pc file (${pcfiledir}), so the tree can be moved
file(RELATIVE_PATH SWIN_PC_TO_PREFIX /_/${CMAKE_INSTALL_LIBDIR}/pkgconfig /_)
string(REGEX REPLACE "/$" "" SWIN_PC_TO_PREFIX "${SWIN_PC_TO_PREFIX}")
configure_file(${CMAKE_CURRENT_LIST_DIR}/swin.pc.in ${PROJECT_BINARY_DIR}/swin.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/swin.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# CMake package
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/swinConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/swinConfig.cmake
                              INSTALL_DESTINATION ${SWIN_INSTALL_CMAKEDIR}
                              PATH_VARS CMAKE_INSTALL_INCLUDEDIR SWIN_INSTALL_DATADIR)
# before 1.0 a new minor version may break the API: 0.1.x is compatible with 0.1 only
write_basic_package_version_file(${PROJECT_BINARY_DIR}/swinConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(EXPORT swinTargets NAMESPACE swin:: DESTINATION ${SWIN_INSTALL_CMAKEDIR})
install(FILES ${PROJECT_BINARY_DIR}/swinConfig.cmake ${PROJECT_BINARY_DIR}/swinConfigVersion.cmake
        DESTINATION ${SWIN_INSTALL_CMAKEDIR})

# ---- .deb: cpack -G DEB in the build directory -> swin_<version>_<arch>.deb, installing under /usr
set(SWIN_PACKAGE_MAINTAINER "swin maintainers <maintainers@users.noreply.a-seed-71f04964.example>"
    CACHE STRING "Maintainer field of the .deb")
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME swin)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "${SWIN_PACKAGE_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Swin Transformer V1/V2 image classification in C and CUDA")
set(CPACK_PACKAGE_DESCRIPTION
    "libswin loads timm and Hugging Face Swin / Swin V2 checkpoints (safetensors) and classifies
images on the CPU (a plain reference implementation) or on an NVIDIA GPU, with decoding and
preprocessing identical to Pillow, timm and transformers. The package holds the swin command,
the shared and static library with its headers, pkg-config and CMake files, and a small
embedded digits model (share/swin/digits).")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${SWIN_PACKAGE_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)   # shlibs file and the ldconfig trigger
find_program(SWIN_DPKG_SHLIBDEPS dpkg-shlibdeps)
# the CUDA libraries, when they come from NVIDIA's packages (dpkg-shlibdeps finds no package for a
# toolkit installed by the runfile); -DSWIN_DEB_CUDA_DEPENDS= leaves them out
if(SWIN_HAVE_CUDA)
  set(_v ${CUDAToolkit_VERSION_MAJOR}-${CUDAToolkit_VERSION_MINOR})
  set(_deps "cuda-cudart-${_v}, libcublas-${_v}")
  if(NVJPEG_INCLUDE_DIR AND NVJPEG_LIBRARY)
    string(APPEND _deps ", libnvjpeg-${_v}")
  endif()
  set(SWIN_DEB_CUDA_DEPENDS "${_deps}" CACHE STRING "Depends of the .deb on the CUDA runtime packages")
  set(CPACK_DEBIAN_PACKAGE_DEPENDS "${SWIN_DEB_CUDA_DEPENDS}")
endif()
if(SWIN_DPKG_SHLIBDEPS)
  # Depends from what bin/swin and libswin.so link (libc6, libcjson1, libjpeg62-turbo, libgomp1);
  # libraries no Debian package owns (a CUDA toolkit from NVIDIA's installer) are left out
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
else()
  string(JOIN ", " CPACK_DEBIAN_PACKAGE_DEPENDS "libc6 (>= 2.34), libcjson1 (>= 1.7.10), libjpeg62-turbo (>= 1.3.1), libgomp1"
              ${CPACK_DEBIAN_PACKAGE_DEPENDS})
endif()
include(CPack)
