package mt_magic.spark;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import javax.servlet.Filter;
import javax.servlet.FilterChain;
import javax.servlet.FilterConfig;
import javax.servlet.ServletException;
import javax.servlet.ServletRequest;
import javax.servlet.ServletResponse;
import javax.servlet.http.Cookie;
import javax.servlet.http.HttpServletRequest;
import javax.servlet.http.HttpServletResponse;

/**
 * mt_magic's gate on a Spark web UI (installed through spark.ui.filters): only a request that carries the UI's token
 * gets through, as "Authorization: Bearer TOKEN", or the cookie a visit with "?token=TOKEN" sets (HttpOnly,
 * SameSite=Strict, then a redirect that drops the token from the address), as Jupyter Server does. A request with
 * the cookie that changes something (not GET/HEAD) must come from the page's own origin. Tokens are compared in
 * constant time. The token is the filter's init parameter "token" (Spark's spark.FILTER.param.token, from a 0600
 * properties file, never a command line); without one every request is refused. The javax.servlet imports become
 * jakarta.servlet for Spark 4 (mt_magic.runtime.spark.ui_auth compiles both).
 */
public final class UiTokenFilter implements Filter {
  private byte[] token;
  private byte[] cookieValue;
  private String cookieName;
  private String hint = "";

  @Override
  public void init(FilterConfig config) throws ServletException {
    String given = config.getInitParameter("token");
    String help = config.getInitParameter("hint");
    hint = help == null ? "" : help;
    if (given == null || given.isEmpty()) {
      return;
    }
    token = given.getBytes(StandardCharsets.UTF_8);
    String digest = sha256Hex("mt_magic-ui-cookie:" + given);
    cookieName = "mt_magic_ui_" + sha256Hex("mt_magic-ui-name:" + given).substring(0, 12);
    cookieValue = digest.getBytes(StandardCharsets.UTF_8);
  }

  @Override
  public void destroy() {}

  @Override
  public void doFilter(ServletRequest req, ServletResponse res, FilterChain chain)
      throws IOException, ServletException {
    HttpServletRequest request = (HttpServletRequest) req;
    HttpServletResponse response = (HttpServletResponse) res;
    if (token == null) {
      refuse(response, HttpServletResponse.SC_FORBIDDEN, "this page has no token configured: nobody gets in.");
      return;
    }
    String authorization = request.getHeader("Authorization");
    if (authorization != null && authorization.startsWith("Bearer ")) {
      if (matches(token, authorization.substring(7).trim())) {
        chain.doFilter(req, res);
      } else {
        refuse(response, HttpServletResponse.SC_UNAUTHORIZED, "wrong token.");
      }
      return;
    }
    String query = request.getQueryString();
    String given = queryToken(query);
    if (given != null) {
      if (!matches(token, given)) {
        refuse(response, HttpServletResponse.SC_UNAUTHORIZED, "wrong token.");
        return;
      }
      response.addHeader(
          "Set-Cookie",
          cookieName + "=" + new String(cookieValue, StandardCharsets.UTF_8)
              + "; Path=/; HttpOnly; SameSite=Strict");
      String rest = withoutToken(query);
      response.setHeader("Location", request.getRequestURI() + (rest.isEmpty() ? "" : "?" + rest));
      response.setStatus(HttpServletResponse.SC_SEE_OTHER);
      return;
    }
    if (hasCookie(request)) {
      String method = request.getMethod();
      boolean safe = "GET".equals(method) || "HEAD".equals(method) || "OPTIONS".equals(method);
      if (!safe && !sameOrigin(request)) {
        refuse(response, HttpServletResponse.SC_FORBIDDEN, "a change from another origin is refused.");
        return;
      }
      chain.doFilter(req, res);
      return;
    }
    refuse(response, HttpServletResponse.SC_UNAUTHORIZED, "this page needs its token.");
  }

  private boolean hasCookie(HttpServletRequest request) {
    Cookie[] cookies = request.getCookies();
    if (cookies == null) {
      return false;
    }
    for (Cookie cookie : cookies) {
      if (cookieName.equals(cookie.getName()) && matches(cookieValue, cookie.getValue())) {
        return true;
      }
    }
    return false;
  }

  /** A browser names the page that sent a request in Origin (else Referer): it must be this page's own. */
  private static boolean sameOrigin(HttpServletRequest request) {
    String host = request.getHeader("Host");
    String from = request.getHeader("Origin");
    if (from == null) {
      from = request.getHeader("Referer");
    }
    if (from == null) {
      return true; // not a browser: a browser names the origin of every cross-origin POST
    }
    if (host == null) {
      return false;
    }
    String own = request.getScheme() + "://" + host;
    return from.equals(own) || from.startsWith(own + "/");
  }

  private static String queryToken(String query) throws IOException {
    if (query == null) {
      return null;
    }
    for (String pair : query.split("&")) {
      if (pair.startsWith("token=")) {
        return java.net.URLDecoder.decode(pair.substring(6), "UTF-8");
      }
    }
    return null;
  }

  private static String withoutToken(String query) {
    StringBuilder rest = new StringBuilder();
    for (String pair : query.split("&")) {
      if (!pair.startsWith("token=") && !pair.isEmpty()) {
        rest.append(rest.length() == 0 ? "" : "&").append(pair);
      }
    }
    return rest.toString();
  }

  private static boolean matches(byte[] expected, String given) {
    return MessageDigest.isEqual(expected, given.getBytes(StandardCharsets.UTF_8));
  }

  private void refuse(HttpServletResponse response, int status, String why) throws IOException {
    response.setStatus(status);
    response.setHeader("WWW-Authenticate", "Bearer realm=\"mt_magic Spark UI\"");
    response.setHeader("Cache-Control", "no-store");
    response.setContentType("text/plain; charset=utf-8");
    String text = "mt_magic: this Spark web UI is its owner's only; " + why
        + " Open it once with the link mt_magic gives its owner (...?token=TOKEN), which sets a cookie, or send"
        + " 'Authorization: Bearer TOKEN'." + (hint.isEmpty() ? "" : " " + hint) + "\n";
    response.getOutputStream().write(text.getBytes(StandardCharsets.UTF_8));
  }

  private static String sha256Hex(String text) {
    try {
      byte[] digest = MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8));
      StringBuilder hex = new StringBuilder();
      for (byte b : digest) {
        hex.append(String.format("%02x", b));
      }
      return hex.toString();
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }
}
