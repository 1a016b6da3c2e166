// The matrix shipped with pathlock, compiled from matrix/cloud-drive.json.
#include <pathlock/matrix_table.hpp>

#include "cloud_drive_matrix.hpp"

namespace pathlock {

const MatrixTable& default_matrix() { return matrices::cloud_drive::kMatrix; }

}  // namespace pathlock
