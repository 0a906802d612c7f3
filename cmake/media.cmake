# Codec libraries of src/media. Included by the top-level CMakeLists.txt after `uform_objects`
# exists and before `uform` and `uform_static` are declared, so the links to those two are
# deferred to the end of the top-level directory (cmake_language(DEFER), CMake >= 3.19).
#
# JPEG, PNG and WebP are small and linked. FFmpeg is not: libuform loads it with dlopen when the
# first call needs it (src/media/av_load.c), from the system or from UFORM_FFMPEG_DIR, so a
# process that never decodes a video never maps it. Its headers are needed at build time only
# (struct layouts, function types); UFORM_FFMPEG_TARGETS is for the tools and tests that encode
# fixtures with FFmpeg themselves.
pkg_check_modules(TURBOJPEG REQUIRED IMPORTED_TARGET libturbojpeg)
pkg_check_modules(SPNG REQUIRED IMPORTED_TARGET spng)
pkg_check_modules(WEBP REQUIRED IMPORTED_TARGET libwebp)

set(UFORM_MEDIA_TARGETS PkgConfig::TURBOJPEG PkgConfig::SPNG PkgConfig::WEBP)
set(UFORM_MEDIA_INSTALL_LIBS turbojpeg spng webp)
set(UFORM_FFMPEG_TARGETS)

if(UFORM_WITH_FFMPEG)
  pkg_check_modules(FFMPEG REQUIRED IMPORTED_TARGET libavformat libavcodec libavutil libswresample libswscale)
  set(UFORM_FFMPEG_TARGETS PkgConfig::FFMPEG)
  target_include_directories(uform_objects PRIVATE ${FFMPEG_INCLUDE_DIRS})
  target_compile_definitions(uform_objects PRIVATE UFORM_WITH_FFMPEG=1)
endif()

target_link_libraries(uform_objects PRIVATE ${UFORM_MEDIA_TARGETS})

function(uform_media_link_libraries)
  if(TARGET uform)
    target_link_libraries(uform PRIVATE ${UFORM_MEDIA_TARGETS} ${CMAKE_DL_LIBS})
  endif()
  if(TARGET uform_static)
    foreach(library IN LISTS UFORM_MEDIA_TARGETS)
      target_link_libraries(uform_static PUBLIC $<BUILD_INTERFACE:${library}>)
    endforeach()
    foreach(library IN LISTS UFORM_MEDIA_INSTALL_LIBS)
      target_link_libraries(uform_static PUBLIC $<INSTALL_INTERFACE:${library}>)
    endforeach()
    target_link_libraries(uform_static PUBLIC ${CMAKE_DL_LIBS})
  endif()
endfunction()
cmake_language(DEFER DIRECTORY ${PROJECT_SOURCE_DIR} CALL uform_media_link_libraries)
