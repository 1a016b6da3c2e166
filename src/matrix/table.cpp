// build_table() and the run-time compiler (see table.hpp).
//
// The deny verdicts are folded into blockers[relation][requested code]
// bitmasks, which is all an engine needs: bit h of blockers[rel][r] is set
// when a lock holding code h refuses a request for code r whose path
// relates to the held one as `rel`.
#include "matrix/table.hpp"

namespace pathlock::matrix {

MatrixTable build_table(const Matrix& m, const std::function<std::string_view(const std::string&)>& keep) {
  MatrixTable t{};
  t.name = keep(m.name);
  t.version = keep(m.version);
  t.fingerprint = keep(m.fingerprint());
  t.op_count = static_cast<std::uint8_t>(m.ops.size());
  for (std::size_t o = 0; o < m.ops.size(); ++o) {
    const OpDef& op = m.ops[o];
    OpInfo& info = t.ops[o];
    info.name = keep(op.name);
    info.label = keep(op.label);
    info.first_code = static_cast<std::uint8_t>(m.code_of(static_cast<int>(o), 0));
    info.role_count = static_cast<std::uint8_t>(op.roles.size());
    for (std::size_t r = 0; r < op.roles.size(); ++r) info.roles[r] = keep(op.roles[r].name);
    info.not_inside_count = static_cast<std::uint8_t>(op.not_inside.size());
    for (std::size_t k = 0; k < op.not_inside.size(); ++k)
      info.not_inside[k] = {static_cast<std::uint8_t>(op.not_inside[k].first),
                            static_cast<std::uint8_t>(op.not_inside[k].second)};
  }
  t.code_count = static_cast<std::uint8_t>(m.codes.size());
  for (std::size_t c = 0; c < m.codes.size(); ++c)
    t.codes[c] = CodeInfo{static_cast<std::uint8_t>(m.codes[c].op), static_cast<std::uint8_t>(m.codes[c].role)};
  for (std::size_t rel = 0; rel < kRelationCount; ++rel)
    for (std::size_t r = 0; r < m.codes.size(); ++r) {
      CodeMask mask = 0;
      for (std::size_t h = 0; h < m.codes.size(); ++h)
        if (m.verdict(static_cast<int>(h), static_cast<int>(r), static_cast<Relation>(rel)) == Verdict::deny)
          mask |= CodeMask{1} << h;
      t.blockers[rel][r] = mask;
    }
  return t;
}

CompiledMatrix::CompiledMatrix(Matrix model) : model_(std::move(model)) {
  table_ = build_table(model_, [this](const std::string& s) -> std::string_view { return strings_.emplace_back(s); });
}

std::unique_ptr<CompiledMatrix> compile_matrix(const std::string& json_text, const std::string& source) {
  return std::make_unique<CompiledMatrix>(parse_matrix(json_text, source));
}

std::unique_ptr<CompiledMatrix> compile_matrix_file(const std::string& path) {
  return std::make_unique<CompiledMatrix>(load_matrix(path));
}

}  // namespace pathlock::matrix
