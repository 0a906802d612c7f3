# Codec libraries of src/media. Included by the top-level CMakeLists.txt after `uform_objects`
# exists and before `uform` and `uform_static` are declared, so the links to those two are
# deferred to the end of the top-level directory (cmake_language(DEFER), CMake >= 3.19).
pkg_check_modules(TURBOJPEG REQUIRED IMPORTED_TARGET libturbojpeg)
pkg_check_modules(SPNG REQUIRED IMPORTED_TARGET spng)
pkg_check_modules(WEBP REQUIRED IMPORTED_TARGET libwebp)

set(UFORM_MEDIA_TARGETS PkgConfig::TURBOJPEG PkgConfig::SPNG PkgConfig::WEBP)
set(UFORM_MEDIA_INSTALL_LIBS turbojpeg spng webp)

if(UFORM_WITH_FFMPEG)
  pkg_check_modules(FFMPEG REQUIRED IMPORTED_TARGET libavformat libavcodec libavutil libswresample libswscale)
  list(APPEND UFORM_MEDIA_TARGETS PkgConfig::FFMPEG)
  list(APPEND UFORM_MEDIA_INSTALL_LIBS avformat avcodec avutil swresample swscale)
  target_compile_definitions(uform_objects PRIVATE UFORM_WITH_FFMPEG=1)
endif()

target_link_libraries(uform_objects PRIVATE ${UFORM_MEDIA_TARGETS})

function(uform_media_link_libraries)
  if(TARGET uform)
    target_link_libraries(uform PRIVATE ${UFORM_MEDIA_TARGETS})
  endif()
  if(TARGET uform_static)
    foreach(library IN LISTS UFORM_MEDIA_TARGETS)
      target_link_libraries(uform_static PUBLIC $<BUILD_INTERFACE:${library}>)
    endforeach()
    foreach(library IN LISTS UFORM_MEDIA_INSTALL_LIBS)
      target_link_libraries(uform_static PUBLIC $<INSTALL_INTERFACE:${library}>)
    endforeach()
  endif()
endfunction()
cmake_language(DEFER DIRECTORY ${PROJECT_SOURCE_DIR} CALL uform_media_link_libraries)
