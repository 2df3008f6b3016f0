package streamops.auth;

import io.jsonwebtoken.Claims;
import io.jsonwebtoken.ExpiredJwtException;
import io.jsonwebtoken.JwtException;
import io.jsonwebtoken.Jwts;
import io.jsonwebtoken.io.Decoders;
import io.jsonwebtoken.security.Keys;
import io.jsonwebtoken.security.SecurityException;
import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.FilterConfig;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.time.Instant;
import java.util.Date;
import javax.crypto.SecretKey;

/**
 * The master's REST server guard: every request carries {@code Authorization: Bearer <JWS>},
 * signed (HS256) with the cluster's key (init parameter {@code secretKey}, base64url) and
 * carrying an expiry ({@code exp}). Unlike Spark's {@code JWSFilter} (403 "JWT Validate Fail"
 * whatever went wrong), a refusal is a 401 whose body says why: no token, a bad signature, no
 * expiry, or an expired token (replayed after its lifetime). Neither the token nor the key is
 * ever written anywhere.
 */
public final class TokenFilter implements Filter {
  private SecretKey key;

  @Override
  public void init(FilterConfig config) {
    String secret = config.getInitParameter("secretKey");
    if (secret == null || secret.isEmpty()) {
      throw new IllegalArgumentException("streamops.auth.TokenFilter: no secretKey parameter");
    }
    key = Keys.hmacShaKeyFor(Decoders.BASE64URL.decode(secret));
  }

  @Override
  public void doFilter(ServletRequest req, ServletResponse res, FilterChain chain)
      throws IOException, ServletException {
    HttpServletResponse hres = (HttpServletResponse) res;
    hres.setHeader("Cache-Control", "no-cache, no-store, must-revalidate");
    String why = refusal(((HttpServletRequest) req).getHeader("Authorization"));
    if (why == null) {
      chain.doFilter(req, res);
      return;
    }
    hres.setStatus(HttpServletResponse.SC_UNAUTHORIZED);
    hres.setHeader("WWW-Authenticate", "Bearer error=\"invalid_token\"");
    hres.setContentType("text/plain;charset=utf-8");
    hres.getWriter().write(why + "\n");
  }

  /** Why the request is refused, or null when its token is good. */
  String refusal(String header) {
    if (header == null) {
      return "missing bearer token: send 'Authorization: Bearer <token>', a token signed "
          + "with the cluster's key (<state>/cluster/rest-secret)";
    }
    if (!header.startsWith("Bearer ") || header.length() <= 7) {
      return "malformed Authorization header: expected 'Bearer <token>'";
    }
    Claims claims;
    try {
      claims = Jwts.parser().verifyWith(key).build().parseSignedClaims(header.substring(7))
          .getPayload();
    } catch (ExpiredJwtException e) {
      Date exp = e.getClaims().getExpiration();
      return "bearer token expired at " + exp.toInstant() + " (now " + Instant.now()
          + "): a token is good for its lifetime only (STREAMOPS_REST_TOKEN_LIFETIME); "
          + "sign a new one";
    } catch (SecurityException e) {
      return "bearer token not signed with this cluster's key (tampered, or another "
          + "cluster's)";
    } catch (JwtException | IllegalArgumentException e) {
      return "malformed bearer token (" + e.getClass().getSimpleName() + ")";
    }
    if (claims.getExpiration() == null) {
      return "bearer token without an expiry (no exp claim): refused, every token must expire";
    }
    return null;
  }

  @Override
  public void destroy() {}
}
