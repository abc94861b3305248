#ifndef LIMELIGHT_CZEROMQ_SHIM_H
#define LIMELIGHT_CZEROMQ_SHIM_H
// libzmq is linked by name: Debian's libzmq.pc carries flags SwiftPM rejects,
// so this target deliberately names no pkgConfig.
#include <zmq.h>
#endif
