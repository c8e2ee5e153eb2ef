#![allow(clippy::unwrap_used)]

use super::*;

#[test]
fn events_render_as_text_and_summaries() {
    assert_eq!(
        render(&json!({"type": "stdout", "text": "hi\n"})),
        ("hi\n".into(), String::new())
    );
    assert_eq!(
        render(&json!({"type": "result", "data": {"text/plain": "42"}})),
        ("42\n".into(), String::new())
    );
    let png = base64::engine::general_purpose::STANDARD.encode([0u8; 10]);
    let (out, err) =
        render(&json!({"type": "display", "data": {"text/plain": "<Figure>", "image/png": png}}));
    assert_eq!(
        (out.as_str(), err.as_str()),
        ("", "[display: image/png, 10 bytes]\n")
    );
    let (_, err) =
        render(&json!({"type": "error", "name": "E", "value": "v", "traceback": ["a", "b\n"]}));
    assert_eq!(err, "a\nb\n");
    let (_, err) =
        render(&json!({"type": "error", "name": "ContextDied", "value": "gone", "traceback": []}));
    assert_eq!(err, "ContextDied: gone\n");
}
