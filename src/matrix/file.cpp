// The public matrix interface (pathlock/matrix.hpp): thin functions over the
// private model, parser and emitters of src/matrix.
#include "matrix/file.hpp"

#include "matrix/emit.hpp"
#include "matrix/words.hpp"

namespace pathlock::matrix {

MatrixFile MatrixFile::parse(const std::string& json_text, const std::string& source) {
  auto impl = std::make_shared<Impl>();
  impl->compiled = compile_matrix(json_text, source);
  return MatrixFile(std::move(impl));
}

MatrixFile MatrixFile::load(const std::string& path) { return parse(read_text_file(path), path); }

const std::string& MatrixFile::name() const { return impl_->model().name; }
const std::string& MatrixFile::version() const { return impl_->model().version; }
const std::string& MatrixFile::source() const { return impl_->model().source; }
std::string MatrixFile::fingerprint() const { return impl_->model().fingerprint(); }
const MatrixTable& MatrixFile::table() const { return impl_->compiled->table(); }
std::shared_ptr<const MatrixTable> MatrixFile::shared_table() const {
  return std::shared_ptr<const MatrixTable>(impl_, &impl_->compiled->table());
}
int MatrixFile::op_index(std::string_view op) const { return impl_->model().op_index(op); }

std::vector<OpView> MatrixFile::ops() const {
  std::vector<OpView> out;
  for (const OpDef& op : impl_->model().ops) {
    OpView v{op.name, op.label, op.example, {}};
    for (const RoleDef& r : op.roles) v.roles.push_back(RoleView{r.name, r.symbols});
    out.push_back(std::move(v));
  }
  return out;
}

namespace {

// The verdicts and their credits of a cell, [held role][requested role][relation].
void fill_verdicts(const Matrix& m, int h, int r, CellSummary& s) {
  const Cell& cell = m.grid[static_cast<std::size_t>(h)][static_cast<std::size_t>(r)];
  for (std::size_t hr = 0; hr < m.ops[static_cast<std::size_t>(h)].roles.size(); ++hr) {
    auto& verdicts = s.verdicts.emplace_back();
    auto& credits = s.credits.emplace_back();
    for (std::size_t rr = 0; rr < m.ops[static_cast<std::size_t>(r)].roles.size(); ++rr) {
      auto& v = verdicts.emplace_back();
      auto& c = credits.emplace_back();
      for (std::size_t rel = 0; rel < kRelationCount; ++rel) {
        const auto relation = static_cast<Relation>(rel);
        v[rel] = verdict_name(m.verdict(m.code_of(h, static_cast<int>(hr)), m.code_of(r, static_cast<int>(rr)), relation));
        const Credit credit = resolve_credit(cell.held_roles[hr], static_cast<int>(rr), relation);
        c[rel] = CreditView{std::string(origin_name(credit.origin)), credit.decision};
      }
    }
  }
}

}  // namespace

CellSummary MatrixFile::cell(int held_op, int requested_op) const {
  const Matrix& m = impl_->model();
  const CellView v = cell_view(m, held_op, requested_op, asymmetric_pairs(m));
  CellSummary s;
  s.tone = std::string(tone_name(v.tone));
  s.asymmetric = v.asymmetric;
  s.review = v.review;
  s.explain = v.explain;
  for (const CellPiece& p : v.pieces) s.pieces.push_back(PieceView{std::string(piece_kind_name(p.kind)), p.text});
  s.words = cell_words(m, held_op, requested_op);
  fill_verdicts(m, held_op, requested_op, s);
  return s;
}

std::vector<Problem> warnings(const MatrixFile& m) { return warning_problems(model_of(m)); }
std::string lint_report(const MatrixFile& m) { return lint_report(model_of(m)); }
std::optional<std::string> version_problem(const MatrixFile& old, const MatrixFile& now) {
  return version_problem(model_of(old), model_of(now));
}
std::string explain(const MatrixFile& m, int held_op, int requested_op) {
  return explain(model_of(m), held_op, requested_op);
}
std::string origin_phrase(const MatrixFile& f, int held_code, int requested_code, Relation rel) {
  const Matrix& m = model_of(f);
  return origin_phrase(m.rule(held_code, requested_code), m.codes[static_cast<std::size_t>(requested_code)].role, rel);
}
std::vector<Problem> diff_lines(const MatrixFile& before, const MatrixFile& after) {
  return diff_lines(model_of(before), model_of(after), diff_matrices(model_of(before), model_of(after)));
}
std::string diff_report(const MatrixFile& before, const MatrixFile& after) {
  return diff_report(model_of(before), model_of(after), diff_matrices(model_of(before), model_of(after)));
}
std::string emit_header(const MatrixFile& m, const std::string& cxx_namespace) {
  return emit_header(model_of(m), cxx_namespace);
}
std::string emit_cases(const MatrixFile& m) { return emit_cases(model_of(m)); }
std::string emit_cases_json(const MatrixFile& m) { return emit_cases_json(model_of(m)); }
std::string emit_conversion_cases(const MatrixFile& m) { return emit_conversion_cases(model_of(m)); }
std::string emit_markdown(const MatrixFile& m) { return emit_markdown(model_of(m)); }
std::string emit_html(const MatrixFile& m) { return emit_html(model_of(m)); }
std::string update_doc(const MatrixFile& m, const std::string& doc) { return update_doc(model_of(m), doc); }

std::vector<LegendLine> legend_lines() {
  std::vector<LegendLine> out;
  for (const LegendEntry& e : legend())
    out.push_back(LegendLine{PieceView{std::string(piece_kind_name(e.sample.kind)), e.sample.text}, e.meaning});
  return out;
}

}  // namespace pathlock::matrix
